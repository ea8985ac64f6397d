"""curves"""

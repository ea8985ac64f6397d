"""weibull"""

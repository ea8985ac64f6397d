"""Streamlit helpers shared by the pages: session state, shared widgets, charts. No statistics here."""

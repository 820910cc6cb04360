"""Streamlit rendering that several pages share, or that would make one page long.

A folder inside ``pages/``: Streamlit lists only the ``.py`` files directly in ``pages/`` as
pages, never those in its subfolders, so nothing here appears in the navigation. Like the
pages, these modules only draw widgets and call ``dpviz``; the logic lives in ``dpviz.app``.
"""

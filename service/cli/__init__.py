"""The command line (regional-menus) and its demo data."""

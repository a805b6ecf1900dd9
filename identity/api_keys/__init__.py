"""The menus API's keys: stored as hashes and owned by an organization, their usage by day, and what a member of an
organization may do with them in the developer console."""

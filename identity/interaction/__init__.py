"""The browser sign-in: the authorization request (``authorization_request``), the interactions waiting for pages
(``store``), the interaction policy (``policy``: prompts, each with its checks) and one small handler per page
(``sign_in_pages`` builds them), and RP-initiated logout (``rp_logout``)."""

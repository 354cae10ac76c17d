"""`forge compare`: the kernel against eager, torch.compile, library peers and a copy.

``peers`` says which peers exist and how each is called, ``timing`` how every one is timed
(one method, one process), ``worker`` is that process, ``record`` what it found (JSON),
``render`` the table and the plot, ``api`` the parent side the CLI calls. docs/compare.md
is the user's page.
"""

"""The live dashboard (``pykueue dashboard``, or the controller's ``--dashboard-port``): a read-only web
page that follows the API server's watch. See ``server.py`` for the pages and ``state.py`` for the feed."""

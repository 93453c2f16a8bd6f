"""Running knowledge: ``/knowledge enable|disable|status|context`` and ``gigi knowledge ...`` from a
shell."""

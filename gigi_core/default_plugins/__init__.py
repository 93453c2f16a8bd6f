"""Plugins every install has, loaded before entry points and written against public hooks only.

Keeping them on the public hooks proves that a third-party package could do the same.
"""

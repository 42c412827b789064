"""Search over an open index: the query language, the searcher, fusion, a query's language."""

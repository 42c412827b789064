"""Retrieval evaluation of markvault (issue 6).

Run from the repository root: ``python -m bench.eval --help``. The modules:

- ``smart``: the SMART-format loader (documents, queries, graded relevance judgments);
- ``metrics``: nDCG@k, Recall@k and MRR@k;
- ``notes``: a collection written out as a vault of Markdown notes;
- ``reference``: the bm25s baseline on the same documents;
- ``variants``: the mechanical query variants deep search gets here;
- ``runner``: markvault's modes and experiments over one collection;
- ``known_item``: the multilingual known-item check (data in ``multilingual/``);
- ``report``: the printed tables and the JSON figures.

The package is importable (``import bench.eval``) so that ``tests/test_eval.py``
runs the same code in CI as the full harness does.
"""

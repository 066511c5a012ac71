"""The `tcl fix` command, above the engine: it runs the analysis, hands each finding's node to
its rule's fixer (the leaf rewrite primitives in `tcl.fixes`), applies the non-overlapping
edits, re-analyses until nothing changes (`apply`), bounds each file's time and memory
(`bounded`), tries unsafe rewrites on the compiler (`verification`) and writes files atomically
(`writer`). Rules import only `tcl.fixes`; nothing in `tcl.fixes` imports this package.
"""

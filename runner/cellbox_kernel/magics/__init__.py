"""The magics (`%name`, `%%name`), one module per group, IPython's grouping.

`framework` holds what every group shares (UsageError, option parsing, the
table convention); each group module imports only it (and modules outside
this package), never a sibling. `dispatch` is the object the generated code
calls: it gathers the groups' tables, and imports a lazy group only when one
of its magics is first used.

This file imports nothing: importing any module of the package runs it first,
so an import here would put every group on a cycle with its own package.
"""

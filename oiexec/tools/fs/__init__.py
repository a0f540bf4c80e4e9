"""Shared file tools every emulated harness maps onto: pure functions returning typed results.

Harness manifests adapt argument names onto these functions and pick a renderer from
`oiexec.tools.fs.render` for the upstream text conventions.
"""

"""Layered configuration: defaults, user and project TOML, profiles, the `OIEXEC_` /
`OPENINTERPRETER_` environment, `-c` overrides; validated into `Settings` with each key's
origin."""

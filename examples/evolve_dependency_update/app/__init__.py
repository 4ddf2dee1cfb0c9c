"""The sales-report app whose vendored table library is being upgraded."""

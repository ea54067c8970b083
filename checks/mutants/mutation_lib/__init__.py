"""The library of checks/mutants/mutation-score, one module per step of the command.

  common    contracts, the rule-ID prefixes of each, small helpers
  manifest  1. the declared mutants: <build>/mutants/manifest.json
  ctests    2. the mutant ctests of the build dir, matched with the declarations
            (and the ports' planted bugs)
  results   3. their results (the catalogue's JUnit reader, one status vocabulary:
            passed / failed / not run, and `not built`) and each mutant's verdict
  report    the table, the per-contract counts, problems and warnings, the JSON

Stdlib only.
"""

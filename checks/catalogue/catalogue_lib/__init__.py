"""The spec-mapped test catalogue of turnstile (checks/catalogue/catalogue), as a package.

  model        the data: rules, contracts, tests, cells, rows, diagnostics, the kinds
  parse_spec   spec/*.md -> contracts and rules
  parse_tests  test sources -> tests (by file and name); ctest JUnit reports -> results
  check        the checks: citations, results per test, verdict per rule, staleness
  render       spec/CATALOGUE.md (keyed by names, no line numbers) and the text table
  render_html  spec/catalogue.html (the same with a run's colours)
  cli          the command line (what checks/catalogue/catalogue runs)

Stdlib only. How a test maps to rules is documented in spec/README.md, "The catalogue".
"""

"""The submissions app's pages, one module per path: submissions (the dashboard, a submission's page and
what hangs off it: versions, the live check, downloads, lifecycle buttons, the declared endpoint), systems
(/systems/), rules (/rules/)."""

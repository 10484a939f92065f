"""Exports, one module per job:

- options.py: the embed's options (EmbedOptions), read from a query string;
- standalone.py: the self-contained HTML file (the embed page with its scripts, styles and one
  answer inlined), also the SCORM lesson's page and the notebook's output;
- images.py: SVG and PNG of a file's graph, drawn by headless Chromium;
- command.py: the `valuegraph export` command.

Each turns a request into its answer through app.service, as /backward does.
"""

#!/bin/sh
# Stand-in pager: baton writes one JSON alert on stdin; keep it in a file.
cat >> "${PAGE_FILE:-/dev/stderr}"

#!/usr/bin/env bash
# Session 49, device call 3: the second form of the candidate -DDSPARKCTL_WS_DH_TAIL_FUSE=1 (tree
# 9b88e09), through the same steps as call 2's run1.sh (that call ran a copy of it writing to
# /tmp/s49r3 instead of /tmp/s49r2).
exec bash "$(dirname "$0")/run1.sh"

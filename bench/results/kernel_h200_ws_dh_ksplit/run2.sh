#!/usr/bin/env bash
# Session 39, call 3: run1.sh on the st.async form of the candidate (-DDSPARKCTL_WS_DH_KSPLIT=2).
KS=2 exec bash "$(dirname "$0")/run1.sh"

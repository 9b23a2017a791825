#!/bin/bash
# Session 18, device call 8: run7.sh again, on another instance (the
# same builds, commands and order; r8/commands.txt lists them).
exec bash $(dirname $0)/run7.sh "$@"

#!/bin/sh
# A baton agent as a shell command: `baton serve` runs it once per message, with the message
# text on stdin; what it prints is the reply.
#
#   npx baton serve reviewer -- ./examples/shell-agent.sh
#   npx baton send reviewer "hello" --wait
#
# The lease's fence is in $BATON_FENCE (attach it to your own writes); $BATON_CHECKPOINT names a
# JSON file holding the last checkpoint: rewrite it and baton stores it for the next holder.
text=$(cat)
handled=$(sed -n 's/.*"handled":\([0-9]*\).*/\1/p' "$BATON_CHECKPOINT")
handled=$(( ${handled:-0} + 1 ))
printf '{"handled":%s}\n' "$handled" > "$BATON_CHECKPOINT"
shout=$(printf '%s' "$text" | tr '[:lower:]' '[:upper:]')
printf '%s on %s (fence %s), message %s: %s\n' "$BATON_AGENT" "${BATON_MACHINE:-$(hostname)}" "$BATON_FENCE" "$handled" "$shout"

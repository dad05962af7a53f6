#!/usr/bin/env bash
# Counts the concurrency mechanisms the Swift sources use (comments left out), at a revision
# (default: the work tree). docs/threads.md ("Inside a run") names the set and says what each is for.
#
# usage: scripts/mechanisms.sh [REVISION]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pattern='DispatchSemaphore|DispatchGroup\(|DispatchQueue\(label|DispatchQueue\.global|makeTimerSource|asyncAfter|pthread_create|pthread_cond_(timed)?wait|pthread_equal|[( =]Task \{|Task\.detached|withCheckedContinuation|withUnsafeContinuation|DispatchSpecificKey|Atomic<|Locked\(|Lock\(\)|ConditionSignal\('
if [[ $# -gt 0 ]]; then
    git grep -h -E "$pattern" "$1" -- Sources
else
    git grep -h -E "$pattern" -- Sources
fi | grep -v -E '^\s*///?' | grep -o -E "$pattern" | sed -E 's/^[( =]Task/Task/' | sort | uniq -c | sort -rn

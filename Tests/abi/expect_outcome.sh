# Sourced by the self-tests of check_compat.sh and check_swift_api.sh: `expect pass|fail VERSION`
# runs the caller's `check_version VERSION` and counts the versions that went the other way;
# `expect_done SUMMARY` fails the self-test if any did, else prints SUMMARY.

failures=0

expect() {   # expect pass|fail VERSION
    local outcome=pass
    echo "--- $2: the check should $1"
    check_version "$2" || outcome=fail
    if [[ $outcome == "$1" ]]; then
        echo "ok: $2: the check ${outcome}ed"
    else
        echo "FAIL: $2: the check ${outcome}ed, expected to $1" >&2
        failures=$((failures + 1))
    fi
}

expect_done() {   # expect_done SUMMARY
    if ((failures > 0)); then
        echo "$failures versions went the wrong way" >&2
        exit 1
    fi
    echo "$1"
}

#!/bin/sh
# openctl-ci.sh: review plans in pull requests, apply exactly the reviewed
# plan after the merge. Portable sh; called by openctl.yml (GitHub Actions)
# and usable from any other CI system.
#
#   openctl-ci.sh sandbox-up     start `openctl sandbox` (a simulated Proxmox VE)
#                                for a dry run; plan and apply then use it
#   openctl-ci.sh plan           plan $OPENCTL_CI_MANIFESTS into $OPENCTL_CI_OUT:
#                                  plan.openctl  the saved plan (upload it)
#                                  plan.txt      the plan as text (also on stdout)
#                                  plan.md       the plan as a pull-request comment
#                                  comment.md    plan.md with a marker line first
#                                  plan.json     the PlanReport (openctl.io/v1)
#                                  changes       "true" or "false"
#   openctl-ci.sh apply          apply exactly $OPENCTL_CI_OUT/plan.openctl; openctl
#                                refuses it if the state moved since the plan
#   openctl-ci.sh sandbox-down   stop the sandbox
#
# Environment:
#   OPENCTL               the openctl command (default: openctl)
#   OPENCTL_CI_MANIFESTS  manifest file or directory, read recursively (default: infra)
#   OPENCTL_CI_OUT        where plan writes and apply reads (default: openctl-plan)
#   OPENCTL_CI_SANDBOX_DIR  the sandbox's files (default: .openctl-sandbox)
#   OPENCTL_CI_SANDBOX_ARGS more flags for `openctl sandbox` (e.g. --speed 20)
#   GITHUB_OUTPUT, GITHUB_STEP_SUMMARY  set by GitHub Actions: plan writes
#                         changes=true|false and markdown=PATH to the first and
#                         the comment to the second
# The target and the state are openctl's own configuration: ~/.openctl/config.yaml
# or OPENCTL_PROXMOX_URL, OPENCTL_PROXMOX_TOKEN_ID, OPENCTL_PROXMOX_TOKEN_SECRET,
# OPENCTL_PROXMOX_FINGERPRINT, OPENCTL_STATE_DSN, OPENCTL_STATE_PASSPHRASE. After
# sandbox-up, plan and apply use the sandbox and a file state in its directory.
#
# Exit status: 0 when done (plan: with or without changes), 1 on error, 2 on a
# usage error.
set -eu

OPENCTL=${OPENCTL:-openctl}
MANIFESTS=${OPENCTL_CI_MANIFESTS:-infra}
OUT=${OPENCTL_CI_OUT:-openctl-plan}
SANDBOX=${OPENCTL_CI_SANDBOX_DIR:-.openctl-sandbox}
MARKER='<!-- openctl-plan -->'

say() { printf 'openctl-ci: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# use_sandbox loads the environment sandbox-up wrote, if it did.
use_sandbox() {
	if [ -f "$SANDBOX/env.sh" ]; then
		. "$SANDBOX/env.sh"
		say "using the sandbox at $OPENCTL_PROXMOX_URL (dry run)"
	fi
}

# field NAME FILE prints the string field NAME of the one-line JSON object
# `openctl sandbox` prints (its values hold no quotes).
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" "$2"; }

sandbox_up() {
	mkdir -p "$SANDBOX"
	SANDBOX=$(cd "$SANDBOX" && pwd)
	if [ -f "$SANDBOX/pid" ] && kill -0 "$(cat "$SANDBOX/pid")" 2>/dev/null; then
		die "a sandbox is already running (pid $(cat "$SANDBOX/pid")); run sandbox-down first"
	fi
	: >"$SANDBOX/sandbox.json"
	# shellcheck disable=SC2086 # OPENCTL_CI_SANDBOX_ARGS is a list of flags
	"$OPENCTL" sandbox --listen 127.0.0.1:0 ${OPENCTL_CI_SANDBOX_ARGS:-} >"$SANDBOX/sandbox.json" 2>"$SANDBOX/sandbox.log" &
	echo $! >"$SANDBOX/pid"
	# Poll for its one JSON line, for at most 30 seconds.
	tries=0
	until [ -s "$SANDBOX/sandbox.json" ]; do
		if ! kill -0 "$(cat "$SANDBOX/pid")" 2>/dev/null; then
			cat "$SANDBOX/sandbox.log" >&2
			die "openctl sandbox exited"
		fi
		tries=$((tries + 1))
		[ "$tries" -le 300 ] || die "openctl sandbox printed nothing in 30s"
		sleep 0.1
	done
	url=$(field url "$SANDBOX/sandbox.json")
	[ -n "$url" ] || die "cannot read the sandbox's address from $SANDBOX/sandbox.json"
	# The sandbox's token is a throwaway one, but keep it out of logs anyway.
	secret=$(field tokenSecret "$SANDBOX/sandbox.json")
	if [ -n "${GITHUB_ACTIONS:-}" ]; then echo "::add-mask::$secret"; fi
	cat >"$SANDBOX/env.sh" <<ENV
export OPENCTL_PROXMOX_URL='$url'
export OPENCTL_PROXMOX_TOKEN_ID='$(field tokenId "$SANDBOX/sandbox.json")'
export OPENCTL_PROXMOX_TOKEN_SECRET='$secret'
export OPENCTL_PROXMOX_FINGERPRINT='$(field fingerprint "$SANDBOX/sandbox.json")'
export OPENCTL_HOME='$SANDBOX/home'
export OPENCTL_STATE_PASSPHRASE='openctl sandbox dry run'
unset OPENCTL_STATE_DSN OPENCTL_CONFIG
ENV
	chmod 600 "$SANDBOX/env.sh"
	say "sandbox serving at $url (pid $(cat "$SANDBOX/pid"))"
}

sandbox_down() {
	[ -f "$SANDBOX/pid" ] || { say "no sandbox running"; return 0; }
	pid=$(cat "$SANDBOX/pid")
	if kill "$pid" 2>/dev/null; then
		tries=0
		while kill -0 "$pid" 2>/dev/null && [ "$tries" -lt 100 ]; do
			tries=$((tries + 1))
			sleep 0.1
		done
	fi
	rm -f "$SANDBOX/pid" "$SANDBOX/env.sh"
	say "sandbox stopped"
}

plan() {
	use_sandbox
	mkdir -p "$OUT"
	rm -f "$OUT/plan.openctl" "$OUT/plan.txt" "$OUT/plan.md" "$OUT/comment.md" "$OUT/plan.json" "$OUT/changes"
	code=0
	NO_COLOR=1 "$OPENCTL" plan -R -f "$MANIFESTS" --out "$OUT/plan.openctl" --detailed-exitcode >"$OUT/plan.txt" || code=$?
	cat "$OUT/plan.txt"
	# 2 is "changes pending" only if the plan was saved: a usage error is 2 too.
	case $code in
	0) changes=false ;;
	2) changes=true ;;
	*) die "openctl plan failed (exit $code)" ;;
	esac
	[ -f "$OUT/plan.openctl" ] || die "openctl plan failed (exit $code) and saved no plan"
	# Render what was saved: reviewers read exactly what apply will do.
	"$OPENCTL" show "$OUT/plan.openctl" -o markdown >"$OUT/plan.md"
	"$OPENCTL" show "$OUT/plan.openctl" -o json >"$OUT/plan.json"
	{ echo "$MARKER"; cat "$OUT/plan.md"; } >"$OUT/comment.md"
	echo "$changes" >"$OUT/changes"
	if [ -n "${GITHUB_OUTPUT:-}" ]; then
		{ echo "changes=$changes"; echo "markdown=$OUT/plan.md"; echo "plan=$OUT/plan.openctl"; } >>"$GITHUB_OUTPUT"
	fi
	if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
		cat "$OUT/plan.md" >>"$GITHUB_STEP_SUMMARY"
	fi
	say "saved plan: $OUT/plan.openctl (changes: $changes)"
}

apply() {
	use_sandbox
	[ -f "$OUT/plan.openctl" ] || die "no saved plan at $OUT/plan.openctl: run plan first, or download the plan artifact"
	NO_COLOR=1 "$OPENCTL" apply "$OUT/plan.openctl"
}

case ${1:-} in
sandbox-up) sandbox_up ;;
sandbox-down) sandbox_down ;;
plan) plan ;;
apply) apply ;;
*)
	echo "usage: openctl-ci.sh sandbox-up | plan | apply | sandbox-down" >&2
	exit 2
	;;
esac

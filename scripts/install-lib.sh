# install-lib.sh — shared by the scripts/install-*.sh scripts (source it
# after setting `name`): log to standard error under the script's name, and
# run a command as root, directly or through sudo.

log() { echo "${name}: $*" >&2; }

# as_root runs "$@" as root: directly when root, else through sudo; without
# either it says so and exits 1.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		log "need root (or sudo) to run: $*"
		exit 1
	fi
}

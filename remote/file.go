package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// WriteFile writes what r holds to path on the host, atomically (a
// temporary file in the same directory, renamed over path, removed when
// the write fails or is cancelled), with mode, creating the directory
// (0755) when needed. The content goes over the session's standard
// input, never on a command line.
//
// The content is followed by an end marker made for this write, and the
// host installs the file only when it arrived whole, marker included. A
// stream that ends early looks, on the host, like any other end of
// input: a connection that drops, or a cancelled write whose signal does
// not reach the command, would otherwise install the part that came.
func (h *Host) WriteFile(ctx context.Context, path string, mode fs.FileMode, r io.Reader) error {
	end := "openctl-end-" + rand.Text() // random: no content ends with it by chance
	_, err := h.Run(ctx, Command{Step: "write " + path, Script: writeFileScript(path, mode, end, rand.Text()), Stdin: io.MultiReader(r, strings.NewReader(end))})
	return err
}

// writeFileScript is WriteFile's script: it reads the content and the
// marker end from its standard input into a temporary file named
// PATH.openctl-ID-XXXXXX (id: random, this write's own) and installs it.
// The traps are set before the temporary file is made and remove every
// file of this write by its prefix, so that a signal arriving at any
// moment — even while mktemp runs, which the wrapper's kill of the process
// group also ends — leaves none behind.
func writeFileScript(path string, mode fs.FileMode, end, id string) string {
	return fmt.Sprintf(`set -e
umask 077
p=%[1]s
mkdir -p "$(dirname "$p")"
clean() { rm -f "$p".openctl-%[5]s-*; }
trap clean EXIT
trap 'clean; exit 143' TERM INT HUP
t=$(mktemp "$p.openctl-%[5]s-XXXXXX")
cat >"$t"
n=$(wc -c <"$t")
if [ "$n" -lt %[2]d ] || [ "$(tail -c %[2]d "$t")" != %[3]s ]; then
  clean # first: after a dropped connection, the echo's SIGPIPE ends the script
  echo "the content was cut short: $p is left as it was" >&2
  exit 1
fi
truncate -s $((n - %[2]d)) "$t"
chmod %04[4]o "$t"
mv -f "$t" "$p"
trap - EXIT`, Quote(path), len(end), end, mode.Perm(), id)
}

// ReadFile returns the contents of path on the host; a missing file is
// an error matching errcode.NotFound.
func (h *Host) ReadFile(ctx context.Context, path string) ([]byte, error) {
	res, err := h.Run(ctx, Command{Step: "read " + path, Script: fmt.Sprintf(`p=%s; if [ -e "$p" ]; then exec cat -- "$p"; fi; echo "no such file: $p" >&2; exit 3`, Quote(path))})
	if ee, ok := err.(*ExitError); ok && ee.Status == 3 {
		return nil, errcode.New(errcode.NotFound, fmt.Sprintf("remote: %s: %s does not exist", h.Addr(), path))
	}
	if err != nil {
		return nil, err
	}
	return res.Stdout, nil
}

// SHA256 returns the hex SHA-256 of path on the host, or "" when the file
// does not exist: what an idempotent install compares before uploading.
func (h *Host) SHA256(ctx context.Context, path string) (string, error) {
	res, err := h.Run(ctx, Command{Step: "checksum " + path, Script: fmt.Sprintf(`p=%s; [ -e "$p" ] || exit 0; sha256sum -- "$p"`, Quote(path))})
	if err != nil {
		return "", err
	}
	sum, _, _ := strings.Cut(string(bytes.TrimSpace(res.Stdout)), " ")
	if sum != "" && len(sum) != 64 {
		return "", errcode.New(errcode.Internal, fmt.Sprintf("remote: %s: sha256sum %s printed %q", h.Addr(), path, sum))
	}
	return sum, nil
}

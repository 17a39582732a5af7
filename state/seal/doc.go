// Package seal encrypts the secret fields of state records (kubeconfigs,
// join tokens, private keys, passwords) so that stores keep them only
// sealed at rest, and so that a user can still recover them with nothing
// but the openssl command-line tool.
//
//	pass, err := seal.Passphrase()          // OPENCTL_STATE_PASSPHRASE(_FILE)
//	kf, err := seal.LoadKeyFile(dir+"/key.yaml", log)
//	keys, err := kf.Unlock(pass)            // the one expensive derivation
//	sealed, err := keys.Seal(id, rec.Secrets)
//	secrets, err := keys.Open(id, sealed)   // MAC verified before decrypting
//
// # Envelope design
//
// A store has one random 256-bit data key (crypto/rand). Its [KeyFile] —
// <dir>/key.yaml in the file store, a row in PostgreSQL — holds the data key
// written as 64 lowercase hex characters and sealed with the user's
// passphrase: PBKDF2-SHA256 with at least [DefaultIterations] (600,000)
// iterations derives an AES-256 key and IV from the passphrase and a random
// 8-byte salt, and AES-256-CBC encrypts the hex key. The result is stored
// exactly as `openssl enc -aes-256-cbc -pbkdf2 -md sha256 -a -A` writes it:
// single-line base64 of "Salted__", the salt and the ciphertext.
//
// Each record's secrets are the JSON object {field path: value}, encrypted
// the same way with the hex data key as the passphrase and
// [RecordIterations] (1) PBKDF2 iteration under a fresh random salt. One
// iteration is enough because the data key is 256 random bits, not a
// guessable password, and it keeps every record cheap to open and still
// decryptable by the openssl CLI. The result is a [Sealed]: the ciphertext
// and an HMAC-SHA256 over the record's ID and the ciphertext.
//
// [Keyring.Open] verifies that HMAC, in constant time, before it decrypts
// anything, because neither of the other layers can be trusted to notice a
// problem: AES-CBC is malleable (flipping bits of one block flips the same
// bits of the next block's plaintext), and go-openssl's only check is the
// PKCS#7 padding, which about one wrong key in 256 passes (its streaming
// Reader accepts far more; this package never uses it). The MAC's key is
// HMAC-SHA256(dataKey, "openctl state mac v1") and its message is
// id.String(), a zero byte and the base64 ciphertext, so sealed secrets
// that are altered, copied to another record or sealed with another data
// key all fail with a [*TamperedError] (errcode.Invalid).
//
// The key file's Check, HMAC-SHA256(dataKey, "openctl state key check v1"),
// does the same for the passphrase: [KeyFile.Unlock] accepts a decryption
// only if it is 64 hex characters whose key reproduces Check, so a wrong
// passphrase whose decryption happens to end in valid padding is still
// reported as wrong (errcode.Unauthorized). Check also identifies the data
// key without revealing it ([KeyFile.SameKey], [Keyring.Matches]), which is
// how a store copying sealed records refuses to mix keys.
//
// # One derivation per process
//
// Only [NewKey], [KeyFile.Unlock] and [Keyring.Reseal] run the 600,000
// iteration derivation (about a third of a second); sealing or opening a
// record costs microseconds. A store should unlock once, lazily, the first
// time it meets a secret, and keep the [Keyring]: listing 1,000 sealed
// records then costs one derivation, not 1,000. [Derivations] counts them so
// tests and benchmarks can prove it.
//
// # Passphrase
//
// [Passphrase] reads OPENCTL_STATE_PASSPHRASE, or else the file named by
// OPENCTL_STATE_PASSPHRASE_FILE (one trailing newline removed; prefer this
// in CI, where environment variables leak into logs and child processes).
// Neither set, or an empty passphrase, is an errcode.Invalid error naming
// both variables; a wrong one makes Unlock fail with errcode.Unauthorized
// naming them too. To change the passphrase, unlock with the old one and
// save the KeyFile that [Keyring.Reseal] returns for the new one: records
// stay as they are.
//
// # Break-glass recovery with the openssl CLI
//
// Everything sealed here can be read back without openctl, with the
// openssl command (1.1.1 or later, for -pbkdf2) and bash (in a POSIX sh,
// replace `<<< "$X"` with a pipe from `printf '%s\n' "$X"`). First
// take the sealed key from the key file (or the store's key row) and
// recover the hex data key with the passphrase; use the key file's
// iterations value for -iter:
//
//	export OPENCTL_STATE_PASSPHRASE='...'
//	SEALED_KEY=$(sed -n 's/^sealedKey: //p' ~/.openctl/state/key.yaml)
//	DATA_KEY=$(openssl enc -d -aes-256-cbc -pbkdf2 -iter 600000 -md sha256 -a -A \
//	    -pass env:OPENCTL_STATE_PASSPHRASE <<< "$SEALED_KEY")
//	echo "$DATA_KEY"        # 64 hex characters
//
// Then decrypt a record's secrets: CIPHERTEXT is the ciphertext field of the
// record's sealed secrets. The output is the JSON object of its secret
// fields:
//
//	openssl enc -d -aes-256-cbc -pbkdf2 -iter 1 -md sha256 -a -A \
//	    -pass pass:$DATA_KEY <<< "$CIPHERTEXT"
//	# {"status.kubeconfig":"apiVersion: v1\n...","status.token":"K10..."}
//
// -a means the input is base64 and -A that it is all on one line, which is
// how openctl writes it. Do not leave -A out: without it openssl expects
// base64 broken into short lines (it writes 64 columns itself), and on a
// single line of 1,024 characters or more — any kubeconfig — it fails with
// "bad magic number" or prints nothing, rather than decrypting. -md sha256
// and -pbkdf2 must match as well; openssl's defaults differ between
// versions.
//
// The CLI does not check the MAC. To check that a record is authentic before
// trusting it, compute it and compare with the record's mac field (ID is
// the record's apiVersion/kind/name, for example
// proxmox.openctl.io/v1/VirtualMachine/web-01):
//
//	MAC_KEY=$(printf %s 'openctl state mac v1' |
//	    openssl dgst -sha256 -mac HMAC -macopt hexkey:$DATA_KEY -r | cut -d' ' -f1)
//	printf '%s\0%s' "$ID" "$CIPHERTEXT" |
//	    openssl dgst -sha256 -mac HMAC -macopt hexkey:$MAC_KEY -r
//
// and likewise `printf %s 'openctl state key check v1' | openssl dgst
// -sha256 -mac HMAC -macopt hexkey:$DATA_KEY -r` reproduces the key file's
// check. TestBreakGlassWithOpenSSLCLI runs these commands.
//
// # Concurrency
//
// A [Keyring] is immutable and safe for concurrent use. A [KeyFile] is a
// plain value. The package holds no state other than the derivation
// counter.
package seal

// Package state defines how openctl remembers what it created: a [Record]
// per resource (the spec as written, the hash of the spec last applied, the
// last status, owner and children, secret values, a generation and a
// lineage) kept in a [Store].
//
//	st, err := state.OpenFile("", state.FileOptions{}) // ~/.openctl/state
//	if err != nil { ... }
//	unlock, err := st.Lock(ctx, state.DefaultScope, state.NewLockInfo("apply"))
//	if err != nil { ... } // *state.LockedError names the holder
//	defer unlock()
//	rec, err := st.Get(ctx, id) // errcode.NotFound if openctl never applied id
//
// The engine reads a record to decide whether an Apply would change
// anything (equal spec hashes and a live resource mean no provider call),
// to find a composite's children and a child's owner at delete time, and to
// order deletes by the $ref dependencies recorded in the spec.
//
// # The contract
//
// Store is a small contract: Get, Put (compare-and-swap on Generation, so a
// stale writer gets errcode.Conflict instead of overwriting), Delete, List
// and Lock (an exclusive lock per scope that reports its holder and never
// waits). Every store runs the same conformance kit,
// statetest.RunConformance; stores that implement [RawStore] also run
// statetest.RunRawConformance. This package ships two stores: [FileStore],
// the default, and [Memory]. The PostgreSQL store, for teams and CI
// runners sharing state, lives in state/postgres.
//
// # Opening a store by DSN
//
// A program that lets its user name the store — "file:~/.openctl/state",
// "postgres://ci@db:5432/openctl" — registers the [Backend] of each kind
// it supports in a [Backends] set, as database/sql programs import their
// drivers, and opens the DSN with it (see ExampleBackends):
//
//	var stores state.Backends
//	if err := stores.Register(state.FileBackend{}, postgres.Backend{}); err != nil { ... }
//	st, err := stores.Open(ctx, dsn, state.OpenOptions{})
//	if c, ok := st.(io.Closer); ok { defer c.Close() }
//
// The DSN's scheme picks the backend; a DSN without a scheme holding '='
// is a libpq key=value DSN ("host=db dbname=openctl") and goes to the
// "postgres" backend. Nothing is registered by importing a package.
// [MaskDSN] hides a DSN's password for messages; no error of Backends
// shows one.
//
// # The file store
//
// [OpenFile] opens a directory, by default $OPENCTL_HOME/state or
// ~/.openctl/state ([DefaultDir]), laid out as:
//
//	key.yaml                         the sealed data key (see Secrets)
//	store-id                         the store's identity (see Identity)
//	<provider>/<kind>/<name>.yaml    one record per file
//	locks/<scope>.lock               a held lock: who, host, pid, operation, since
//	locks/.records, locks/.scopes    flock(2) files serialising writers
//
// Directories are created 0700 and files 0600; a state directory that group
// or others can write is refused, one they can read is used with a warning.
// A record file is the record's fields as YAML, its secrets sealed, and a
// last line holding the SHA-256 of the rest, so that a truncated or damaged
// file is detected. Spec and status values are kept exactly: types (a
// float stays a float, a string that looks like a number stays a string)
// and bytes (line breaks, spaces, bytes that are not UTF-8); every store
// runs the same round-trip test and fuzz target of tricky values.
//
// Writes are atomic: the new contents go to a temporary file (.<name>.yaml.tmp)
// in the same directory, which is fsynced and renamed over the record file,
// and then the directory is fsynced. A reader sees the old record or the
// new one, never a mix, even if the writer is killed (the tests kill one
// with SIGKILL a hundred times); a temporary file left by a killed writer
// is ignored by List and reused by the next write of that record. Put's
// read-compare-write runs under an exclusive flock on locks/.records, never
// on a data file (a rename would defeat such a lock), so Put is a
// compare-and-swap across processes too. Readers take no lock. A record
// file that cannot be read or parsed is an error naming the file: it is
// never taken for a missing record, and Put refuses to overwrite it (Delete
// removes it). The store is meant for a local file system; flock(2) over
// NFS is not relied upon.
//
// # Locks
//
// Lock creates locks/<scope>.lock atomically with its contents (written to
// a temporary file, then hard-linked to the name, which fails if the name
// exists) holding the caller's [LockInfo]. If the scope is held, Lock
// returns a *LockedError naming the holder; a lock file that cannot be read
// still means locked, and the error names the file. [LockInfo.Status] says
// what this host can tell about the holder:
//
//   - HolderDead: it ran on this host in this boot and PID namespace (the
//     lock records Linux's boot ID and /proc/self/ns/pid, so a container
//     sharing the host's name is not mistaken for it) and its pid no
//     longer runs — killed or crashed. The
//     next Lock removes its lock file, logs a warning naming it through
//     FileOptions.Logger, and takes the lock: nobody needs force-unlock.
//   - HolderGone: its pid no longer runs on this host, but the lock does not
//     prove it was taken in this boot (an older openctl wrote it). The
//     error has Stale set and gives the command that breaks it, openctl
//     state force-unlock.
//   - HolderRunning: a process of this host with its pid runs. Lock waits
//     for it (LockWait) or fails; FileStore.ForceUnlock refuses to break
//     the lock, with a *LockedError that has Running set, unless
//     ForceUnlockOptions.Force (openctl state force-unlock --force).
//   - HolderUnknown: another host; ForceUnlock breaks it when asked.
//
// An unlock function removes the lock file only if it still holds its own
// lock ID, so unlocking after a ForceUnlock never removes somebody else's
// lock.
//
// # Identity
//
// Stores that implement [Identified] have an identity: a random ID made
// when the store is first used, kept with its data (the file store-id,
// 0600, in the file store; a row in PostgreSQL) and the same for every
// process that opens the store. Providers mark what they create with it,
// so that two openctl installations with different state never adopt each
// other's resources. The file store creates the file under a temporary
// name and hard-links it into place, so processes opening a new store at
// once agree on one identity. [Copy] carries the source's identity into
// the target ([IdentityAdopter]), which must manage what the source
// created; a target holding records under an identity of its own is
// refused.
//
// # Secrets
//
// Record.Secrets holds values a provider marks secret (kubeconfigs, join
// tokens, private keys, passwords) as secret.Secret, which redacts itself
// in every output. Persistent stores keep them only sealed, with package
// state/seal: a random 256-bit data key is sealed with the user's
// passphrase (PBKDF2-SHA256, 600,000 iterations) into the key file, and
// each record's secrets are encrypted with the data key (AES-256-CBC)
// under an HMAC-SHA256 over the ciphertext and the record's ID that is
// verified before decrypting. Secrets therefore cannot be edited, or moved
// from one record to another, without the error naming the record.
//
// The passphrase comes from FileOptions.Passphrase, by default
// seal.Passphrase: OPENCTL_STATE_PASSPHRASE, else the contents of the file
// OPENCTL_STATE_PASSPHRASE_FILE. A FileStore asks for it at most once, the
// first time it writes or reads a record with secrets, and unlocks the data
// key once: listing 1,000 sealed records costs one key derivation, not
// 1,000. A store whose records carry no secrets never asks. A passphrase
// shorter than seal.MinPassphraseLength (12 characters) is used with a
// warning through FileOptions.Logger. The key file
// is created, 0600, when the first record with secrets is written. A wrong
// passphrase is an error matching errcode.Unauthorized; a key file others
// can write is refused. The seal package documents recovering secrets with
// nothing but the openssl command-line tool.
//
// # Moving state
//
// [RawStore] is the optional interface of stores whose state can be moved
// verbatim: their key file, and their records with the secrets still
// sealed (ExportRaw, ImportRaw). [Copy] copies every record from one such
// store to another (openctl state migrate, from files to PostgreSQL for
// example), preserving generations, lineages, timestamps and sealed
// secrets, without decrypting anything: the target reads the secrets with
// the source's passphrase. Copy holds both stores' default locks, and
// refuses (errcode.Conflict) to overwrite a record of another lineage or a
// newer one, or to mix keys in a store that already holds records.
//
// [Memory] keeps secrets in plaintext, in the process. It implements
// RawStore by sealing on export and opening on import with a key unlocked
// by the passphrase of [MemoryPassphrase]; it creates that key on the first
// export of a record with secrets, unless [MemoryKey] gave it one.
package state

package seal_test

import (
	"errors"
	"fmt"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state/seal"
)

func Example() {
	passphrase := secret.New("correct horse battery staple") // seal.Passphrase() in real use

	// Once per store: create the data key (or LoadKeyFile + Unlock).
	kf, keys, err := seal.NewKey(passphrase, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(kf.KDF, kf.Iterations, kf.Cipher)

	// Per record: no passphrase derivation.
	id := manifest.ID{APIVersion: "k3s.openctl.io/v1", Kind: "Cluster", Name: "lab"}
	sealed, err := keys.Seal(id, map[string]secret.Secret{"status.joinToken": secret.New("K10abc::server:xyz")})
	if err != nil {
		panic(err)
	}
	opened, err := keys.Open(id, sealed)
	if err != nil {
		panic(err)
	}
	fmt.Println(opened["status.joinToken"], opened["status.joinToken"].Reveal())

	// The same sealed secrets presented as another record's are refused.
	_, err = keys.Open(manifest.ID{APIVersion: "k3s.openctl.io/v1", Kind: "Cluster", Name: "prod"}, sealed)
	var tampered *seal.TamperedError
	fmt.Println(errors.As(err, &tampered), errcode.Of(err))
	// Output:
	// pbkdf2-sha256 600000 aes-256-cbc
	// [redacted] K10abc::server:xyz
	// true INVALID_REQUEST
}

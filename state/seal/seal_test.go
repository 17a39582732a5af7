package seal_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state/seal"
)

var (
	vmID   = manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "web-01"}
	k3sID  = manifest.ID{APIVersion: "k3s.openctl.io/v1", Kind: "Cluster", Name: "lab"}
	pass   = secret.New("correct horse battery staple")
	kubecf = "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: " + strings.Repeat("LS0tLS1CRUdJTi", 200) + "\n"
)

func sampleSecrets() map[string]secret.Secret {
	return map[string]secret.Secret{
		"status.kubeconfig": secret.New(kubecf),
		"status.joinToken":  secret.New("K10abc::server:0123456789abcdef"),
		"spec.password":     secret.New(`p"a\ss` + "\x00\n\u00e9\U0001F511"),
	}
}

// cheapKey returns a key file and keyring made with 1 PBKDF2 iteration.
func cheapKey(t testing.TB, p secret.Secret) (*seal.KeyFile, *seal.Keyring) {
	t.Helper()
	kf, k, err := seal.NewKeyIter(p, 1)
	require.NoError(t, err)
	return kf, k
}

func TestSealOpenRoundTrip(t *testing.T) {
	_, k := cheapKey(t, pass)
	tests := []struct {
		name    string
		secrets map[string]secret.Secret
	}{
		{"three secrets", sampleSecrets()},
		{"one empty value", map[string]secret.Secret{"status.token": {}}},
		{"many", func() map[string]secret.Secret {
			m := map[string]secret.Secret{}
			for _, c := range "abcdefghijklmnopqrstuvwxyz" {
				m["status."+string(c)] = secret.New(strings.Repeat(string(c), 100))
			}
			return m
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := k.Seal(vmID, tt.secrets)
			require.NoError(t, err)
			require.NotNil(t, s)
			assert.NotContains(t, s.Ciphertext, "\n", "single-line base64")
			assert.True(t, strings.HasPrefix(s.Ciphertext, "U2FsdGVkX1"), "openssl Salted__ header")
			for _, v := range tt.secrets {
				if v.Reveal() != "" {
					assert.NotContains(t, s.Ciphertext, v.Reveal())
				}
			}
			got, err := k.Open(vmID, s)
			require.NoError(t, err)
			require.Len(t, got, len(tt.secrets))
			for path, v := range tt.secrets {
				assert.True(t, v.Equal(got[path]), path)
			}
		})
	}
}

func TestSealEmptyAndOpenNil(t *testing.T) {
	_, k := cheapKey(t, pass)
	for _, m := range []map[string]secret.Secret{nil, {}} {
		s, err := k.Seal(vmID, m)
		require.NoError(t, err)
		assert.Nil(t, s)
	}
	got, err := k.Open(vmID, nil)
	require.NoError(t, err)
	assert.Nil(t, got)
}

func TestSealDiffersEachTime(t *testing.T) {
	_, k := cheapKey(t, pass)
	seen := map[string]bool{}
	for range 50 {
		s, err := k.Seal(vmID, sampleSecrets())
		require.NoError(t, err)
		require.False(t, seen[s.Ciphertext], "ciphertext repeated: the salt is not random")
		seen[s.Ciphertext] = true
		raw, err := base64.StdEncoding.DecodeString(s.Ciphertext)
		require.NoError(t, err)
		require.False(t, seen["salt:"+string(raw[8:16])], "salt repeated")
		seen["salt:"+string(raw[8:16])] = true
	}
}

func TestOpenRejectsTampering(t *testing.T) {
	_, k := cheapKey(t, pass)
	_, other := cheapKey(t, pass) // same passphrase, different data key
	good, err := k.Seal(vmID, sampleSecrets())
	require.NoError(t, err)
	fromOther, err := other.Seal(vmID, sampleSecrets())
	require.NoError(t, err)

	flip := func(s string, i int) string {
		b := []byte(s)
		b[i] ^= 0x01
		return string(b)
	}
	raw, _ := base64.StdEncoding.DecodeString(good.Ciphertext)
	raw[len(raw)-20] ^= 0x80 // a CBC bit flip that keeps the padding valid
	bitFlipped := base64.StdEncoding.EncodeToString(raw)

	tests := []struct {
		name string
		id   manifest.ID
		s    *seal.Sealed
	}{
		{"ciphertext byte flipped", vmID, &seal.Sealed{Ciphertext: flip(good.Ciphertext, 40), MAC: good.MAC}},
		{"CBC bit flip in the last block", vmID, &seal.Sealed{Ciphertext: bitFlipped, MAC: good.MAC}},
		{"ciphertext truncated", vmID, &seal.Sealed{Ciphertext: good.Ciphertext[:len(good.Ciphertext)-24], MAC: good.MAC}},
		{"MAC flipped", vmID, &seal.Sealed{Ciphertext: good.Ciphertext, MAC: flip(good.MAC, 3)}},
		{"MAC not hex", vmID, &seal.Sealed{Ciphertext: good.Ciphertext, MAC: "zz" + good.MAC[2:]}},
		{"MAC empty", vmID, &seal.Sealed{Ciphertext: good.Ciphertext}},
		{"MAC truncated", vmID, &seal.Sealed{Ciphertext: good.Ciphertext, MAC: good.MAC[:32]}},
		{"moved to another record", k3sID, good},
		{"moved to a record with another name", manifest.ID{APIVersion: vmID.APIVersion, Kind: vmID.Kind, Name: "web-02"}, good},
		{"sealed with another data key", vmID, fromOther},
		// MAC checked first: a ciphertext that is not even base64 must
		// still be reported as tampered, not as a decoding error.
		{"garbage ciphertext", vmID, &seal.Sealed{Ciphertext: "%%% not base64 %%%", MAC: good.MAC}},
		{"empty", vmID, &seal.Sealed{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := k.Open(tt.id, tt.s)
			require.Error(t, err)
			assert.Nil(t, got)
			var te *seal.TamperedError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, tt.id, te.ID)
			assert.ErrorIs(t, err, errcode.Invalid)
			assert.Equal(t, errcode.Invalid, errcode.Of(err))
			assert.Equal(t, "seal: secrets of "+tt.id.Short()+" fail their integrity check (tampered, moved from another record, or sealed with another key)", err.Error())
		})
	}
}

// An authentic record (valid MAC) that the sealer wrote malformed is an
// errcode.Invalid error but not a TamperedError.
func TestOpenAuthenticButMalformed(t *testing.T) {
	_, k := cheapKey(t, pass)
	tests := []struct{ name, ciphertext string }{
		{"not base64", "!!!!"},
		{"no Salted__ header", base64.StdEncoding.EncodeToString(make([]byte, 48))},
		{"odd length", base64.StdEncoding.EncodeToString(append([]byte("Salted__12345678"), make([]byte, 17)...))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := k.Open(vmID, &seal.Sealed{Ciphertext: tt.ciphertext, MAC: k.MACOf(vmID, tt.ciphertext)})
			require.Error(t, err)
			assert.ErrorIs(t, err, errcode.Invalid)
			var te *seal.TamperedError
			assert.False(t, errors.As(err, &te))
			assert.Contains(t, err.Error(), "seal: secrets of VirtualMachine/web-01")
		})
	}
}

func TestMatchesAndSameKey(t *testing.T) {
	kf1, k1 := cheapKey(t, pass)
	kf2, k2 := cheapKey(t, pass)
	assert.True(t, k1.Matches(kf1))
	assert.False(t, k1.Matches(kf2))
	assert.False(t, k2.Matches(nil))
	assert.True(t, kf1.SameKey(kf1))
	assert.False(t, kf1.SameKey(kf2))
	assert.False(t, kf1.SameKey(nil))
}

func TestConcurrentSealOpen(t *testing.T) {
	_, k := cheapKey(t, pass)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := manifest.ID{APIVersion: "x.openctl.io/v1", Kind: "Thing", Name: string(rune('a' + g))}
			for i := range 50 {
				in := map[string]secret.Secret{"status.token": secret.New(id.String() + string(rune('0'+i%10)))}
				s, err := k.Seal(id, in)
				if err != nil {
					errs <- err
					return
				}
				out, err := k.Open(id, s)
				if err != nil {
					errs <- err
					return
				}
				if !out["status.token"].Equal(in["status.token"]) {
					errs <- errors.New("round trip mismatch")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

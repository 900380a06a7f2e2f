package encrypt

import (
	"bytes"
	"crypto/aes"
	stdcipher "crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/nacl/secretbox"
)

// Transformer turns values into their stored form and back. The first
// provider (and its first key) writes; every provider reads what starts
// with its prefix. Safe for concurrent use.
type Transformer struct {
	providers []provider
}

// encryptedPrefix starts every encrypted value; the identity provider
// refuses values with it rather than return ciphertext as an object.
var encryptedPrefix = []byte("k8s:enc:")

// errNoProvider is upstream's error for a value no provider reads.
var errNoProvider = errors.New("no matching prefix found")

// ToStorage encrypts value for key (AES-GCM authenticates the key, so a
// value copied to another key does not decrypt).
func (t *Transformer) ToStorage(key string, value []byte) ([]byte, error) {
	p := t.providers[0]
	if p.prefix == "" {
		return value, nil
	}
	k := p.keys[0]
	out := make([]byte, 0, len(p.prefix)+len(k.prefix)+len(value)+64)
	out = append(append(out, p.prefix...), k.prefix...)
	return k.cipher.seal(out, value, []byte(key))
}

// FromStorage decrypts a stored value. stale reports that it was not
// written by the writing provider and key: writing it again, even
// unchanged, moves it to the current key (key rotation).
func (t *Transformer) FromStorage(key string, stored []byte) (value []byte, stale bool, err error) {
	for i, p := range t.providers {
		if p.prefix == "" {
			if bytes.HasPrefix(stored, encryptedPrefix) {
				continue // encrypted by a provider that may come later
			}
			return stored, i != 0, nil
		}
		rest, ok := bytes.CutPrefix(stored, []byte(p.prefix))
		if !ok {
			continue
		}
		var errs []error
		for j, k := range p.keys {
			data, ok := bytes.CutPrefix(rest, []byte(k.prefix))
			if !ok {
				continue
			}
			v, err := k.cipher.open(data, []byte(key))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s%s: %w", p.prefix, k.prefix, err))
				continue
			}
			return v, i != 0 || j != 0, nil
		}
		if len(errs) > 0 {
			return nil, false, errors.Join(errs...)
		}
		return nil, false, fmt.Errorf("%s: no key of that name configured", strings.TrimSuffix(p.prefix, ":"))
	}
	if bytes.HasPrefix(stored, encryptedPrefix) {
		return nil, false, fmt.Errorf("%w: value is encrypted with a provider that is not configured", errNoProvider)
	}
	return nil, false, fmt.Errorf("%w: value is not encrypted and identity is not a provider", errNoProvider)
}

// provider is one entry of a resource's provider list: a prefix and its
// keys; identity has neither.
type provider struct {
	prefix string
	keys   []namedCipher
}

type namedCipher struct {
	prefix string // "<key name>:"
	cipher cipher
}

// cipher seals a value after out and opens a sealed one; ad is the
// storage key, which only AES-GCM authenticates (as upstream).
type cipher interface {
	seal(out, value, ad []byte) ([]byte, error)
	open(sealed, ad []byte) ([]byte, error)
}

// gcm: a random 12-byte nonce, then the sealed value and its tag.
type gcm struct{ aead stdcipher.AEAD }

func newGCM(key []byte) (cipher, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := stdcipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return gcm{aead}, nil
}

func (g gcm) seal(out, value, ad []byte) ([]byte, error) {
	n := len(out)
	out = append(out, make([]byte, g.aead.NonceSize())...)
	nonce := out[n:]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("aes-gcm nonce: %w", err)
	}
	return g.aead.Seal(out, nonce, value, ad), nil
}

func (g gcm) open(sealed, ad []byte) ([]byte, error) {
	ns := g.aead.NonceSize()
	if len(sealed) < ns {
		return nil, errors.New("the stored data was shorter than the required size")
	}
	return g.aead.Open(nil, sealed[:ns], sealed[ns:], ad)
}

// cbc: a random 16-byte IV, then the value PKCS#7-padded and encrypted.
type cbc struct{ block stdcipher.Block }

func newCBC(key []byte) (cipher, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cbc{block}, nil
}

func (c cbc) seal(out, value, _ []byte) ([]byte, error) {
	bs := aes.BlockSize
	pad := bs - len(value)%bs
	n := len(out)
	out = append(out, make([]byte, bs+len(value)+pad)...)
	iv, body := out[n:n+bs], out[n+bs:]
	if _, err := rand.Read(iv); err != nil {
		return nil, fmt.Errorf("aes-cbc iv: %w", err)
	}
	copy(body, value)
	for i := len(value); i < len(body); i++ {
		body[i] = byte(pad)
	}
	stdcipher.NewCBCEncrypter(c.block, iv).CryptBlocks(body, body)
	return out, nil
}

func (c cbc) open(sealed, _ []byte) ([]byte, error) {
	bs := aes.BlockSize
	if len(sealed) < 2*bs {
		return nil, errors.New("the stored data was shorter than the required size")
	}
	iv, body := sealed[:bs], sealed[bs:]
	if len(body)%bs != 0 {
		return nil, errors.New("the stored data is not a multiple of the block size")
	}
	out := make([]byte, len(body))
	stdcipher.NewCBCDecrypter(c.block, iv).CryptBlocks(out, body)
	pad := int(out[len(out)-1])
	if pad == 0 || pad > bs || pad > len(out) {
		return nil, errors.New("invalid padding on input")
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errors.New("invalid padding on input")
		}
	}
	return out[:len(out)-pad], nil
}

// box: NaCl secretbox with a random 24-byte nonce before the box.
type box struct{ key [32]byte }

func newSecretbox(key []byte) (cipher, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("expected key size 32 for secretbox provider, got %d", len(key))
	}
	var b box
	copy(b.key[:], key)
	return b, nil
}

func (b box) seal(out, value, _ []byte) ([]byte, error) {
	var nonce [24]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("secretbox nonce: %w", err)
	}
	out = append(out, nonce[:]...)
	return secretbox.Seal(out, value, &nonce, &b.key), nil
}

func (b box) open(sealed, _ []byte) ([]byte, error) {
	if len(sealed) < 24 {
		return nil, errors.New("the stored data was shorter than the required size")
	}
	var nonce [24]byte
	copy(nonce[:], sealed)
	v, ok := secretbox.Open(nil, sealed[24:], &nonce, &b.key)
	if !ok {
		return nil, errors.New("secretbox: authentication failed")
	}
	return v, nil
}

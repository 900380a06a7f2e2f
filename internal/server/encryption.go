package server

import "github.com/crdserver/crdserver/internal/storage/encrypt"

// loadEncryption reads --encryption-provider-config; without one nothing
// is encrypted.
func loadEncryption(path string) (*encrypt.Config, error) {
	if path == "" {
		return nil, nil
	}
	return encrypt.LoadConfig(path)
}

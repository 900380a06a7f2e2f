// Package webhooktest starts HTTPS webhook servers for tests (and for the
// load generator's conversion webhook): a fresh CA per server, whose PEM is
// the caBundle a test registers.
package webhooktest

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/crdserver/crdserver/internal/webhook/webhookcert"
)

// Server is a running HTTPS webhook server.
type Server struct {
	*httptest.Server
	// CABundle is the PEM of the CA that signed the server's certificate.
	CABundle []byte
}

// Start serves h over HTTPS (HTTP/2 offered) on 127.0.0.1 with a
// certificate for 127.0.0.1, localhost and dnsNames, signed by a new CA.
// The server closes at the end of the test.
func Start(t testing.TB, h http.Handler, dnsNames ...string) *Server {
	t.Helper()
	cert, caPEM, err := Certificate(dnsNames...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &Server{Server: srv, CABundle: caPEM}
}

// Certificate returns a serving certificate for 127.0.0.1, localhost and
// dnsNames, and the PEM of the new CA that signed it.
func Certificate(dnsNames ...string) (tls.Certificate, []byte, error) {
	return webhookcert.Certificate(dnsNames...)
}

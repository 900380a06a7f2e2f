// Package webhook calls out to webhooks: conversion webhooks of CRDs and
// admission webhooks. It turns a clientConfig (a URL, or a Service of the
// server's own) into an HTTPS client with the config's caBundle, keeps one
// connection pool per config, and posts one JSON body per call under the
// call's timeout and the request's context. It knows nothing of what the
// bodies mean.
package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/crdserver/crdserver/internal/webhook/h2"
)

// ClientConfig says where a webhook is: exactly one of URL and Service.
// It mirrors the clientConfig of CRD conversion and of admission webhook
// registrations.
type ClientConfig struct {
	URL     string
	Service *Service
	// CABundle is PEM; empty (or only white space) verifies against the
	// system roots.
	CABundle []byte
}

// Service is a webhook reached through a Service object of the server's
// own.
type Service struct {
	Namespace, Name string
	Path            string // default "/"
	Port            int32  // default 443
}

// ServerName is the name a Service's webhook certificate must carry:
// <name>.<namespace>.svc.
func (s *Service) ServerName() string { return s.Name + "." + s.Namespace + ".svc" }

// Resolver turns a Service reference into the address to dial, host:port.
// It is called for every new connection, so a Service that moves is
// followed.
type Resolver interface {
	Resolve(ctx context.Context, namespace, name string, port int32) (string, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, namespace, name string, port int32) (string, error)

func (f ResolverFunc) Resolve(ctx context.Context, namespace, name string, port int32) (string, error) {
	return f(ctx, namespace, name, port)
}

var _ Resolver = ResolverFunc(nil)

// DefaultTimeout is the timeout of a call that names none: upstream's
// webhooks wait 30 seconds unless configured otherwise.
const DefaultTimeout = 30 * time.Second

// maxClients bounds the clients a Manager keeps.
const maxClients = 1000

// writeBuffer is the write buffer of an HTTP/1.1 connection.
const writeBuffer = 32 << 10

// tlsHandshakeTimeout bounds a new connection's TLS handshake, as
// net/http's transport does.
const tlsHandshakeTimeout = 10 * time.Second

// maxResponse bounds what a webhook may answer.
const maxResponse = 64 << 20

// maxPrealloc bounds the buffer made for an answer's declared length
// before it arrives: a webhook declaring 64 MiB and sending nothing must
// not make the server hold 64 MiB per call.
const maxPrealloc = 4 << 20

// Manager hands out clients, one per distinct ClientConfig, so that calls
// to one webhook share a connection pool (HTTP/2 when the webhook offers
// it, through package h2; HTTP/1.1 through net/http when it does not).
// It is safe for concurrent use.
type Manager struct {
	// Resolver resolves Service references; nil refuses them.
	Resolver Resolver
	// HTTP1 calls webhooks over HTTP/1.1 only, through net/http. It was
	// made for servers whose webhooks stop often, as crdtest's do with
	// every test: Go's HTTP/2 client kept an idle connection open after
	// the webhook server's GOAWAY, so a webhook server that shut down
	// gracefully waited its one-second GOAWAY timeout for it. Package h2
	// closes a connection as soon as its last stream ends after a GOAWAY,
	// so HTTP/2 no longer makes such servers wait. It is not the default:
	// upstream negotiates HTTP/2.
	HTTP1 bool

	mu      sync.Mutex
	clients map[[32]byte]*Client
}

// Client calls one webhook.
type Client struct {
	url *url.URL // with the Service's host name for service configs
	// h2 calls the webhook over HTTP/2; nil for HTTP1 managers. Once a
	// connection negotiated HTTP/1.1 instead, http1 is set and every call
	// goes through http, net/http's client.
	h2         *h2.Transport
	http1      atomic.Bool
	http       *http.Client
	serverName string
	// timed is the URL of the last call's timeout: the calls to one
	// webhook nearly always share one, and building the URL showed in
	// profiles of busy webhooks.
	timed atomic.Pointer[timedURL]
}

// timedURL is the URL of calls with a timeout, its query saying so.
type timedURL struct {
	timeout time.Duration
	url     string
	path    string // with the query, as HTTP/2's :path
}

// Client returns the client of cfg, creating it on first use. The config
// must have passed validation; an error says what is wrong with it anyway
// (a caBundle without certificates, a URL that does not parse).
func (m *Manager) Client(cfg ClientConfig) (*Client, error) {
	key := configKey(cfg)
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.clients[key]; ok {
		return c, nil
	}
	c, err := m.newClient(cfg)
	if err != nil {
		return nil, err
	}
	if m.clients == nil {
		m.clients = map[[32]byte]*Client{}
	}
	// Configurations change (a new caBundle, another URL) and leave
	// their old clients behind: past maxClients, arbitrary ones go, their
	// idle connections closed. A client still in use keeps working; a
	// later call with its configuration builds a new one.
	for k, old := range m.clients {
		if len(m.clients) < maxClients {
			break
		}
		old.closeIdleConnections()
		delete(m.clients, k)
	}
	m.clients[key] = c
	return c, nil
}

func configKey(cfg ClientConfig) [32]byte {
	b, _ := json.Marshal(cfg)
	return sha256.Sum256(b)
}

func (m *Manager) newClient(cfg ClientConfig) (*Client, error) {
	protos := []string{"h2", "http/1.1"}
	if m.HTTP1 {
		protos = protos[1:]
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: protos}
	if len(bytes.TrimSpace(cfg.CABundle)) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CABundle) {
			return nil, errors.New("unable to load root certificates: unable to parse bytes as PEM block")
		}
		tlsCfg.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		TLSClientConfig:     tlsCfg,
		ForceAttemptHTTP2:   !m.HTTP1,
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DialContext:         dialer.DialContext,
		// Room for an AdmissionReview of two objects of several KiB with
		// its headers: an HTTP/1.1 request is flushed once, one write and
		// one TLS record, rather than once per 4 KiB.
		WriteBufferSize: writeBuffer,
	}
	c := &Client{http: &http.Client{Transport: tr}}
	switch {
	case cfg.Service != nil:
		svc := *cfg.Service
		if svc.Port == 0 {
			svc.Port = 443
		}
		path := svc.Path
		if path == "" {
			path = "/"
		}
		if m.Resolver == nil {
			return nil, fmt.Errorf("service %s/%s: no service resolver", svc.Namespace, svc.Name)
		}
		c.serverName = svc.ServerName()
		tlsCfg.ServerName = c.serverName
		c.url = &url.URL{Scheme: "https", Host: net.JoinHostPort(c.serverName, strconv.Itoa(int(svc.Port))), Path: path}
		resolver := m.Resolver
		// The URL names the Service; every new connection dials where the
		// Service points now.
		tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			addr, err := resolver.Resolve(ctx, svc.Namespace, svc.Name, svc.Port)
			if err != nil {
				return nil, err
			}
			return dialer.DialContext(ctx, network, addr)
		}
	case cfg.URL != "":
		u, err := url.Parse(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("invalid webhook URL %q: %w", cfg.URL, err)
		}
		if u.Scheme != "https" {
			return nil, fmt.Errorf("invalid webhook URL %q: the scheme must be https", cfg.URL)
		}
		c.url = u
	default:
		return nil, errors.New("webhook client config names neither a URL nor a service")
	}
	if !m.HTTP1 {
		c.h2 = &h2.Transport{Dial: c.dialTLS(tlsCfg, tr.DialContext), MaxResponse: maxResponse}
	}
	return c, nil
}

// dialTLS returns the dial of the client's HTTP/2 connections: through
// dial (the Resolver's for service configs), then a TLS handshake that
// offers h2 and HTTP/1.1, as net/http's transport does.
func (c *Client) dialTLS(base *tls.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(context.Context) (*tls.Conn, error) {
	cfg := base.Clone()
	cfg.NextProtos = []string{"h2", "http/1.1"}
	if cfg.ServerName == "" {
		cfg.ServerName = c.url.Hostname()
	}
	addr := c.url.Host
	if c.url.Port() == "" {
		addr = net.JoinHostPort(c.url.Hostname(), "443")
	}
	return func(ctx context.Context) (*tls.Conn, error) {
		raw, err := dial(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(raw, cfg)
		hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			raw.Close()
			return nil, err
		}
		return tc, nil
	}
}

// closeIdleConnections closes the client's idle connections; busy ones
// finish their calls.
func (c *Client) closeIdleConnections() {
	if c.h2 != nil {
		c.h2.CloseIdleConnections()
	}
	c.http.CloseIdleConnections()
}

// URL is where the client posts.
func (c *Client) URL() string { return c.url.String() }

// Post sends body as JSON and returns the answer's body. timeout 0 means
// DefaultTimeout; it is also sent as the timeout query parameter, as
// upstream does, so that the webhook knows its budget. A non-2xx answer is
// an error worded as client-go words it, with the webhook's own message
// when the answer is a Status.
func (c *Client) Post(ctx context.Context, body []byte, timeout time.Duration) ([]byte, error) {
	return c.PostParts(ctx, [][]byte{body}, timeout)
}

// PostParts is Post with a body in parts, sent one after another as one
// body without being joined first: a list's conversion review is
// megabytes of encoded objects that are in memory already. The parts must
// not change until PostParts returns.
func (c *Client) PostParts(ctx context.Context, parts [][]byte, timeout time.Duration) ([]byte, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := c.urlWith(timeout)
	if c.h2 != nil && !c.http1.Load() {
		// A conversion review comes back about as large as it went, its
		// objects converted; an admission review's answer is small and
		// fits in its first frame, before the hint is looked at.
		hint := 0
		for _, p := range parts {
			hint += len(p)
		}
		resp, err := c.h2.Post(ctx, &h2.Request{Authority: c.url.Host, Path: u.path, Header: h2Header, Body: parts, AnswerHint: hint})
		switch {
		case err == nil:
			return answer(resp.Status, resp.Body, c.url.Path)
		case errors.Is(err, h2.ErrTooLarge):
			return nil, errTooLarge
		case !errors.Is(err, h2.ErrNotH2):
			return nil, &url.Error{Op: "Post", URL: u.url, Err: err}
		}
		// The webhook speaks HTTP/1.1 only: from now on net/http calls it.
		c.http1.Store(true)
	}
	return c.postHTTP1(ctx, u.url, parts)
}

// h2Header holds the fields of a call besides the pseudo-header fields and
// content-length: those net/http sends (but accept-encoding), so that
// webhooks see the same requests over either client.
var h2Header = []hpack.HeaderField{
	{Name: "content-type", Value: "application/json"},
	{Name: "accept", Value: "application/json, */*"},
	{Name: "user-agent", Value: "Go-http-client/2.0"},
}

var errTooLarge = fmt.Errorf("the webhook's answer is larger than %d bytes", maxResponse)

// answer is the result of a call answered with code and body.
func answer(code int, body []byte, path string) ([]byte, error) {
	if code < 200 || code > 299 {
		return nil, &StatusError{Code: code, Message: answerMessage(code, body, path)}
	}
	return body, nil
}

// postHTTP1 is PostParts through net/http, which speaks HTTP/1.1 to the
// webhooks that do not negotiate HTTP/2.
func (c *Client) postHTTP1(ctx context.Context, u string, parts [][]byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return nil, err
	}
	// As NewRequest sets them for a bytes.Reader: the length is declared,
	// and a request that must be sent again (on a connection that went
	// away) reads its body again from the start.
	for _, p := range parts {
		req.ContentLength += int64(len(p))
	}
	req.GetBody = func() (io.ReadCloser, error) {
		if req.ContentLength == 0 {
			return http.NoBody, nil
		}
		return &partsReader{parts: parts}, nil
	}
	req.Body, _ = req.GetBody()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, */*")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	// A declared length is read into one buffer of that size, not a
	// series of growing ones (a list's review answers a megabyte), up to
	// maxPrealloc.
	buf := bytes.NewBuffer(make([]byte, 0, min(max(resp.ContentLength, 0), maxPrealloc)+bytes.MinRead))
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, maxResponse+1))
	data := buf.Bytes()
	if err != nil {
		return nil, fmt.Errorf("reading the webhook's answer: %w", err)
	}
	if len(data) > maxResponse {
		return nil, errTooLarge
	}
	return answer(resp.StatusCode, data, c.url.Path)
}

// partsReader reads parts one after another, leaving them as they are
// (a request sent again reads them again).
type partsReader struct {
	parts [][]byte
	i     int // the part being read
	off   int // how much of it was read
}

func (r *partsReader) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) && r.i < len(r.parts) {
		m := copy(b[n:], r.parts[r.i][r.off:])
		n += m
		if r.off += m; r.off == len(r.parts[r.i]) {
			r.i, r.off = r.i+1, 0
		}
	}
	if n == 0 && len(b) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (r *partsReader) Close() error { return nil }

// urlWith is the URL of a call with timeout.
func (c *Client) urlWith(timeout time.Duration) *timedURL {
	if t := c.timed.Load(); t != nil && t.timeout == timeout {
		return t
	}
	u := *c.url
	q := u.Query()
	q.Set("timeout", timeout.String())
	u.RawQuery = q.Encode()
	t := &timedURL{timeout: timeout, url: u.String(), path: u.RequestURI()}
	c.timed.Store(t)
	return t
}

// StatusError is a webhook's answer with a status code other than 2xx.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string { return e.Message }

// answerMessage words a failed answer as client-go does: the Status's
// message when the body is a Status, else a sentence per code.
func answerMessage(code int, body []byte, path string) string {
	var st struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
		return st.Message
	}
	var msg string
	switch code {
	case http.StatusConflict:
		msg = "the server reported a conflict"
	case http.StatusNotFound:
		msg = "the server could not find the requested resource"
	case http.StatusBadRequest:
		msg = "the server rejected our request for an unknown reason"
	case http.StatusUnauthorized:
		msg = "the server has asked for the client to provide credentials"
	case http.StatusForbidden:
		msg = "the server does not allow access to the requested resource"
	case http.StatusMethodNotAllowed:
		msg = "the server does not allow this method on the requested resource"
	case http.StatusUnsupportedMediaType:
		msg = "the server has received data in an unsupported media type"
	case http.StatusTooManyRequests:
		msg = "the server has received too many requests and has asked us to try again later"
	case http.StatusGatewayTimeout:
		msg = "the server was unable to return a response in the time allotted, but may still be processing the request"
	default:
		if code >= 500 {
			msg = fmt.Sprintf("an error on the server (%q) has prevented the request from succeeding", firstLine(body))
		} else {
			msg = fmt.Sprintf("the server responded with the status code %d but did not return more information", code)
		}
	}
	return msg + " (post " + strings.TrimPrefix(path, "/") + ")"
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	if s == "" {
		return "unknown"
	}
	return s
}

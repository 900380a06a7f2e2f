package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// WriteObject encodes obj as JSON or YAML in the form mt asks for and writes
// it with status. Plain JSON ends in a newline, as upstream's encoder
// writes it; indented JSON does not, as upstream's MarshalIndent writes
// it. An object that cannot be encoded becomes a 500 Status.
func WriteObject(w http.ResponseWriter, status int, mt MediaType, obj any) {
	b, err := Marshal(obj)
	if err != nil {
		writeInternal(w, fmt.Errorf("encoding %T: %w", obj, err))
		return
	}
	WriteRaw(w, status, mt, b)
}

// WriteRaw writes an already JSON-encoded object (a watch cache item, a
// cached discovery document) in the form mt asks for: as is for JSON
// (indented when mt.Pretty), converted for YAML.
func WriteRaw(w http.ResponseWriter, status int, mt MediaType, jsonBytes []byte) {
	if mt.Type != MediaYAML && !mt.Pretty {
		// Plain JSON goes out as it is, its final newline written apart
		// rather than by copying the body to append it.
		n := len(jsonBytes)
		nl := n == 0 || jsonBytes[n-1] != '\n'
		writePlain(w, status, n, nl, func() { _, _ = w.Write(jsonBytes) })
		return
	}
	writeRendered(w, status, mt, jsonBytes)
}

// RawParts is an encoded object held in parts (a cached object, see
// watchcache.Item): Len bytes that WriteTo writes, or JSON returns put
// together.
type RawParts interface {
	io.WriterTo
	Len() int
	JSON() []byte
}

// WriteRawParts is WriteRaw of an object held in parts, which plain JSON
// writes as they are. The object is JSON, which never ends in a newline.
func WriteRawParts(w http.ResponseWriter, status int, mt MediaType, obj RawParts) {
	if mt.Type != MediaYAML && !mt.Pretty {
		writePlain(w, status, obj.Len(), true, func() { _, _ = obj.WriteTo(w) })
		return
	}
	writeRendered(w, status, mt, obj.JSON())
}

// writePlain answers n bytes of JSON that write writes, and a newline
// when nl.
func writePlain(w http.ResponseWriter, status, n int, nl bool, write func()) {
	if nl {
		n++
	}
	h := w.Header()
	h.Set("Content-Type", MediaJSON)
	h.Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(status)
	write()
	if nl {
		_, _ = w.Write(newline)
	}
}

// writeRendered answers JSON rendered as mt asks (YAML, indented).
func writeRendered(w http.ResponseWriter, status int, mt MediaType, jsonBytes []byte) {
	body, ctype, err := Render(mt, jsonBytes)
	if err != nil {
		writeInternal(w, err)
		return
	}
	writeBody(w, status, ctype, body)
}

// writeBody answers body, of Content-Type ctype.
func writeBody(w http.ResponseWriter, status int, ctype string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

var newline = []byte{'\n'}

// Render returns the body and Content-Type of jsonBytes, a JSON object, in
// form mt (JSON or YAML).
func Render(mt MediaType, jsonBytes []byte) ([]byte, string, error) {
	if mt.Type == MediaYAML {
		y, err := yaml.JSONToYAML(jsonBytes)
		if err != nil {
			return nil, "", fmt.Errorf("converting response to YAML: %w", err)
		}
		return y, MediaYAML, nil
	}
	if mt.Pretty {
		return AppendIndent(make([]byte, 0, 2*len(jsonBytes)), jsonBytes), MediaJSON, nil
	}
	if n := len(jsonBytes); n == 0 || jsonBytes[n-1] != '\n' {
		jsonBytes = append(jsonBytes[:n:n], '\n')
	}
	return jsonBytes, MediaJSON, nil
}

// errInternal is what a client reads for an error we did not mean to
// show it; the error itself goes to the log.
var errInternal = errors.New("an unexpected error occurred; details are in the server log")

// ErrorToStatus turns any error into the Status a client reads. Errors that
// carry a Status (apierrors.APIStatus, also wrapped) keep their code,
// reason, message and details; anything else is a 500 InternalError that
// does not reveal its cause (the caller logs it; WriteStatus does).
func ErrorToStatus(err error) (st metav1.Status, known bool) {
	var as apierrors.APIStatus
	if errors.As(err, &as) {
		st = as.Status()
		if st.Code == 0 {
			st.Code = codeForReason(st.Reason)
		}
		known = true
	} else {
		st = apierrors.NewInternalError(errInternal).Status()
	}
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	return st, known
}

// codeForReason fills a missing code the way upstream's ErrorToAPIStatus
// does: 500 unless the reason says otherwise.
func codeForReason(reason metav1.StatusReason) int32 {
	switch reason {
	case metav1.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden
	case metav1.StatusReasonNotFound:
		return http.StatusNotFound
	case metav1.StatusReasonAlreadyExists, metav1.StatusReasonConflict:
		return http.StatusConflict
	case metav1.StatusReasonGone, metav1.StatusReasonExpired:
		return http.StatusGone
	case metav1.StatusReasonInvalid:
		return http.StatusUnprocessableEntity
	case metav1.StatusReasonBadRequest:
		return http.StatusBadRequest
	case metav1.StatusReasonMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case metav1.StatusReasonTooManyRequests:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// WriteStatus writes err as a Status in the form the request's Accept header
// asks for (JSON when it asks for nothing we write). A Status asking the
// client to retry later sets Retry-After. Errors that are not Statuses are
// logged with the request and answered with a plain 500.
func WriteStatus(w http.ResponseWriter, r *http.Request, err error) {
	st, known := ErrorToStatus(err)
	if !known {
		attrs := []any{"err", err}
		if r != nil {
			attrs = append(attrs, "method", r.Method, "path", r.URL.Path)
		}
		slog.Error("internal error", attrs...)
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	if st.Code == http.StatusNoContent || (st.Code >= 100 && st.Code < 200) {
		w.WriteHeader(int(st.Code))
		return
	}
	mt := JSON
	if r != nil {
		// As upstream: a Status goes out in the first form the client
		// accepts without a conversion, protobuf included (even for a
		// resource with no protobuf form); clauses asking for a Table or
		// a metadata form do not count, and when none is left it is
		// JSON, indented whoever asks (upstream's WriteRawJSON).
		mt.Pretty = true
		if m, err := negotiate(r.Header.Get("Accept"), PlainOnly, PlainOnly); err == nil {
			mt = MediaType{Type: m.Type, Pretty: m.Pretty || PrettyRequested(r)}
		}
	}
	if mt.Type == MediaProtobuf {
		if err := writeProtobufStatus(w, &st); err != nil {
			writeInternal(w, err)
		}
		return
	}
	b, err := json.Marshal(&st)
	if err != nil { // a Status always encodes; keep the client informed anyway
		writeInternal(w, err)
		return
	}
	WriteRaw(w, int(st.Code), mt, b)
}

// writeInternal answers 500 when encoding itself failed.
func writeInternal(w http.ResponseWriter, err error) {
	slog.Error("encoding response", "err", err)
	st, _ := ErrorToStatus(err)
	b, _ := json.Marshal(&st)
	w.Header().Set("Content-Type", MediaJSON)
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write(append(b, '\n'))
}

// NotFound is upstream's 404 for a path that names nothing it serves (an
// unknown group, version or resource): "the server could not find the
// requested resource", which kubectl and client-go recognise.
// apierrors.NewNotFound with an empty resource would say `"" not found`.
func NotFound() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotFound,
		Reason:  metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
		Details: &metav1.StatusDetails{},
	}}
}

// MethodNotAllowed is upstream's 405 for a method a path does not take.
func MethodNotAllowed() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusMethodNotAllowed,
		Reason:  metav1.StatusReasonMethodNotAllowed,
		Message: "the server does not allow this method on the requested resource",
		Details: &metav1.StatusDetails{},
	}}
}

// UnknownError is upstream's answer to an error that is not a Status: a
// 500 with reason Unknown and the error's text as the message.
func UnknownError(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonUnknown, Message: msg,
	}}
}

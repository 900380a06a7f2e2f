// Package codec turns request bodies into unstructured objects and objects
// into response bodies: JSON and YAML decoding with upstream's size, depth
// and strict-field rules, Accept negotiation, Status errors, watch frames,
// and the Table and PartialObjectMetadata forms.
//
// Objects are map[string]any with integers as int64 and other numbers as
// float64, as k8s.io/apimachinery/pkg/util/json decodes them.
package codec

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"unsafe"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// DefaultMaxBodyBytes is kube-apiserver's default request body limit (3 MiB).
const DefaultMaxBodyBytes = 3 << 20

// Media types the server reads and writes.
const (
	MediaJSON = "application/json"
	MediaYAML = "application/yaml"
)

// acceptedInput is what a 415 says the server reads: upstream's list of its
// serializers, protobuf included even for custom resources, which cannot
// be sent in it (kube-apiserver 1.37 says the same).
var acceptedInput = []string{MediaJSON, MediaYAML, "application/vnd.kubernetes.protobuf"}

// DecodeOptions bound the work one body may cost. The zero value means
// the defaults.
type DecodeOptions struct {
	MaxBytes int64 // default DefaultMaxBodyBytes
	MaxDepth int   // default DefaultMaxDepth
	// RawManagedFields keeps a JSON object's metadata.managedFields as a
	// Raw (a slice of the body, which must then not change) when it is
	// a non-empty array written exactly as Marshal writes it; see
	// rawfields.go. Whatever else it holds is decoded as usual.
	RawManagedFields bool
	// RawManagedFieldsAt, with RawManagedFields and when its end is not
	// 0, is where in the JSON body its metadata.managedFields are, known
	// to be in the form a Raw holds: IndexStored found them so in these
	// very bytes (Indexed.RawManagedFields). They are kept as a Raw
	// without checking them again. Anything else must leave it zero.
	RawManagedFieldsAt [2]int
	// Unchanging says the caller never changes a JSON body while what it
	// decodes to is in use: its strings are then slices of the body
	// itself rather than of a copy.
	Unchanging bool
	// GoType is the Go type upstream decodes the body into, for a
	// resource that has one: a key given twice then adds to what the
	// first one set, as encoding/json decodes it (see typedmerge.go).
	GoType reflect.Type
}

// Decode decodes a JSON or YAML body holding one object.
//
// contentType "" means JSON. Anything but JSON or YAML is a 415
// UnsupportedMediaType Status. A body over MaxBytes is a 413, malformed input
// or a body that is not an object is a *DecodeError (400 BadRequest).
//
// problems are upstream's strict-decoding complaints that do not stop the
// decode: `duplicate field "spec.replicas"` for JSON, one "yaml: unmarshal
// errors:" listing the keys for YAML. The handler turns them into
// warnings (see Warnings) or, with fieldValidation=Strict, into an error.
func Decode(body []byte, contentType string, opts DecodeOptions) (obj map[string]any, problems []string, err error) {
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBodyBytes
	}
	maxDepth := opts.MaxDepth
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	if int64(len(body)) > maxBytes {
		return nil, nil, TooLarge(maxBytes)
	}
	mt, err := inputMediaType(contentType)
	if err != nil {
		return nil, nil, err
	}
	data := body
	if mt == MediaYAML {
		if obj, ok := jsonAsYAML(body, maxDepth); ok {
			return obj, nil, nil
		}
		data, problems, err = yamlToJSON(body)
		if err != nil {
			return nil, nil, &DecodeError{Err: err, summary: summarize(body)}
		}
	}
	var src string
	if opts.Unchanging && mt == MediaJSON {
		src = unsafe.String(unsafe.SliceData(data), len(data))
	} else {
		src = string(data)
	}
	v, dups, err := decodeJSONWith(parser{data: data, src: src, maxDepth: maxDepth,
		rawManagedFields: opts.RawManagedFields && mt == MediaJSON, goType: opts.GoType,
		rawAt: opts.RawManagedFieldsAt})
	if err != nil {
		return nil, nil, &DecodeError{Err: fmt.Errorf("couldn't get version/kind; json parse error: %w", err), summary: summarize(body)}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, &DecodeError{Err: notAnObject(v), summary: summarize(body)}
	}
	return obj, append(problems, dups...), nil
}

// inputMediaType maps a Content-Type to MediaJSON or MediaYAML.
func inputMediaType(contentType string) (string, error) {
	if contentType == "" {
		return MediaJSON, nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err == nil {
		switch mt {
		case MediaJSON:
			return MediaJSON, nil
		case MediaYAML:
			return MediaYAML, nil
		}
	}
	return "", UnsupportedMediaType()
}

// UnsupportedMediaType is upstream's 415 for a body it cannot read.
func UnsupportedMediaType() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: " + strings.Join(acceptedInput, ", "),
	}}
}

// TooLarge is upstream's 413 for a body over limit bytes.
func TooLarge(limit int64) error {
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
}

// ReadAll is io.ReadAll for a body whose Content-Length is size (<= 0 when
// unknown): a declared length is read into one allocation of that size
// instead of a growing series, which costs twice the body per request.
func ReadAll(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 || size > DefaultMaxBodyBytes {
		return io.ReadAll(r)
	}
	// One byte more than declared, so that reaching EOF needs no growth;
	// but a declared length is only a claim, so memory beyond 256 KiB is
	// taken as the bytes arrive.
	b := make([]byte, 0, min(size+1, 256<<10))
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// ReadBody reads a request body of at most limit bytes (<= 0: the default),
// answering upstream's 413 beyond it. It closes the body.
func ReadBody(r *http.Request, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	defer r.Body.Close()
	if r.ContentLength > limit {
		return nil, TooLarge(limit)
	}
	lr := &io.LimitedReader{R: r.Body, N: limit + 1}
	data, err := ReadAll(lr, r.ContentLength)
	if err != nil {
		var st apierrors.APIStatus
		if errors.As(err, &st) {
			return nil, err
		}
		return nil, fmt.Errorf("reading request body: %w", err)
	}
	if lr.N <= 0 {
		return nil, TooLarge(limit)
	}
	return data, nil
}

// DecodeError is a body that is not one well-formed JSON or YAML object.
// It is a 400 BadRequest whose message is upstream's base error, e.g.
// "couldn't get version/kind; json parse error: unexpected end of JSON
// input". Handlers that know the kind they expected can use ForKind for
// upstream's full message.
type DecodeError struct {
	Err     error
	summary string
}

func (e *DecodeError) Error() string { return e.Err.Error() }
func (e *DecodeError) Unwrap() error { return e.Err }

// Status makes DecodeError an apierrors.APIStatus.
func (e *DecodeError) Status() metav1.Status {
	return apierrors.NewBadRequest(e.Error()).Status()
}

// ForKind returns upstream's message for a body that should have been a
// kind: `the object provided is unrecognized (must be of type Widget): <err>
// (<first 30 bytes>)`.
func (e *DecodeError) ForKind(kind string) error {
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", kind, e.Err, e.summary))
}

// summarize is upstream's short form of a body for error messages: JSON
// objects as text, anything else as hex, 30 bytes at most.
func summarize(data []byte) string {
	const max = 30
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > max {
			return string(data[:max]) + " ..."
		}
		return string(data)
	default:
		if len(data) > max {
			return hex.EncodeToString(data[:max]) + " ..."
		}
		return hex.EncodeToString(data)
	}
}

// findKindType is how encoding/json names the struct upstream decodes a body
// into to find its kind; it appears in the error for non-object bodies.
const findKindType = "struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }"

func notAnObject(v any) error {
	var what string
	switch v.(type) {
	case nil:
		return errors.New("Object 'Kind' is missing in 'null'")
	case []any:
		what = "array"
	case string:
		what = "string"
	case bool:
		what = "bool"
	default:
		what = "number"
	}
	return fmt.Errorf("couldn't get version/kind; json parse error: json: cannot unmarshal %s into Go value of type %s", what, findKindType)
}

// yamlToJSON converts YAML to JSON. Duplicate keys, which the lenient
// conversion drops silently, are one problem as upstream's strict decoder
// reports them: "yaml: unmarshal errors:" and a line per key (Warnings
// splits it).
func yamlToJSON(body []byte) ([]byte, []string, error) {
	j, strictErr := yaml.YAMLToJSONStrict(body)
	if strictErr == nil {
		return j, nil, nil
	}
	j, err := yaml.YAMLToJSON(body)
	if err != nil {
		return nil, nil, err
	}
	return j, []string{strictErr.Error()}, nil
}

// Warnings are the Warning texts of strict-decoding problems under
// fieldValidation=Warn, as upstream words them: each line of a YAML
// problem on its own ("line 3: key \"a\" already set in map"), the
// others as they are.
func Warnings(problems []string) []string {
	var out []string
	for _, p := range problems {
		out = append(out, yamlProblems(p)...)
	}
	return out
}

// yamlProblems splits "yaml: unmarshal errors:\n  line 3: key \"a\"
// already set in map\n ..." (with or without "error converting YAML to
// JSON: " before it) into its lines; any other text is one problem.
func yamlProblems(msg string) []string {
	for _, prefix := range []string{"yaml: unmarshal errors:\n", "error converting YAML to JSON: yaml: unmarshal errors:\n"} {
		if rest, ok := strings.CutPrefix(msg, prefix); ok {
			lines := strings.Split(rest, "\n")
			for i := range lines {
				lines[i] = strings.TrimSpace(lines[i])
			}
			return lines
		}
	}
	return []string{msg}
}

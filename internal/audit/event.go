package audit

import (
	"encoding/json"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Event is one audit.k8s.io/v1 Event, with upstream's JSON field names.
type Event struct {
	Kind             string                     `json:"kind"`
	APIVersion       string                     `json:"apiVersion"`
	Level            Level                      `json:"level"`
	AuditID          string                     `json:"auditID"`
	Stage            Stage                      `json:"stage"`
	RequestURI       string                     `json:"requestURI"`
	Verb             string                     `json:"verb"`
	User             authenticationv1.UserInfo  `json:"user"`
	ImpersonatedUser *authenticationv1.UserInfo `json:"impersonatedUser,omitempty"`
	SourceIPs        []string                   `json:"sourceIPs,omitempty"`
	UserAgent        string                     `json:"userAgent,omitempty"`
	ObjectRef        *ObjectReference           `json:"objectRef,omitempty"`
	ResponseStatus   *metav1.Status             `json:"responseStatus,omitempty"`
	// RequestObject and ResponseObject are the JSON bodies, at levels
	// Request and RequestResponse.
	RequestObject            json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage   `json:"responseObject,omitempty"`
	RequestReceivedTimestamp MicroTime         `json:"requestReceivedTimestamp"`
	StageTimestamp           MicroTime         `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

// ObjectReference names the object a resource request addresses.
type ObjectReference struct {
	Resource        string `json:"resource,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	APIGroup        string `json:"apiGroup,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Subresource     string `json:"subresource,omitempty"`
}

// Sink receives finished events. Process must not block the request: a
// sink that cannot keep up drops events (see Log).
type Sink interface {
	Process(ev *Event)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(*Event)

// Process calls f(ev).
func (f SinkFunc) Process(ev *Event) { f(ev) }

var (
	_ Sink = SinkFunc(nil)
	_ Sink = (*Log)(nil)
)

// MicroTime is a timestamp as upstream's events write it (metav1.MicroTime:
// RFC 3339 in UTC with microseconds). It marshals as text, which
// encoding/json quotes without the re-parsing MarshalJSON output gets:
// timestamps were a third of an event's encoding.
type MicroTime struct{ time.Time }

// NowMicro is the current time as a MicroTime.
func NowMicro() MicroTime { return MicroTime{time.Now()} }

const microFormat = "2006-01-02T15:04:05.000000Z07:00"

// MarshalText implements encoding.TextMarshaler.
func (t MicroTime) MarshalText() ([]byte, error) {
	return t.UTC().AppendFormat(make([]byte, 0, len(microFormat)), microFormat), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *MicroTime) UnmarshalText(b []byte) error {
	pt, err := time.Parse(microFormat, string(b))
	t.Time = pt
	return err
}

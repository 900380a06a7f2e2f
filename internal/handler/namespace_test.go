package handler

import "testing"

func TestNamespaceTerminating(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    bool
		wantErr bool
	}{
		{name: "active", in: `{"metadata":{"name":"a"},"status":{"phase":"Active"}}`},
		{name: "no status", in: `{"metadata":{"name":"a"}}`},
		{name: "phase terminating", in: `{"metadata":{"name":"a"},"status":{"phase":"Terminating"}}`, want: true},
		{name: "deletion timestamp", in: `{"metadata":{"deletionTimestamp":"2020-01-01T00:00:00Z"}}`, want: true},
		// A present key counts, as it did when the object was decoded whole.
		{name: "deletion timestamp null", in: `{"metadata":{"deletionTimestamp":null}}`, want: true},
		{name: "not an object", in: `["Terminating"]`, wantErr: true},
		{name: "escaped key", in: `{"metadata":{"deletion\u0054imestamp":"2020-01-01T00:00:00Z"}}`, want: true},
		{name: "other key case", in: `{"metadata":{"DeletionTimestamp":"2020-01-01T00:00:00Z"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := namespaceTerminating([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

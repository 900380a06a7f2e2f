package loadgen

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// The list-raw-paged, table, table-paged and metadata workloads list
// through the raw client in the forms other clients ask for, reading
// answers without decoding them (as list-raw does for JSON), so that they
// measure the server: "list-raw-paged" as list-raw in pages of
// Config.PageSize, "table" as `kubectl get` without paging, "table-paged"
// as `kubectl get` does (pages of Config.PageSize), "metadata" as metadata
// informers do (controller-runtime, the garbage collector).

// tableAccept is the Accept header kubectl get sends.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// metadataAccept is the JSON part of client-go's metadata client's Accept
// header, and metadataProtobufAccept all of it: the client asks for
// protobuf first.
const (
	metadataAccept         = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	metadataProtobufAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," + metadataAccept
)

func (b *bench) listRawPaged(ctx context.Context, _ int) error {
	return b.listAs(ctx, "application/json", b.cfg.PageSize)
}

func (b *bench) listTable(ctx context.Context, _ int) error {
	return b.listAs(ctx, tableAccept, 0)
}

func (b *bench) listTablePaged(ctx context.Context, _ int) error {
	return b.listAs(ctx, tableAccept, b.cfg.PageSize)
}

func (b *bench) listMetadata(ctx context.Context, _ int) error {
	return b.listAs(ctx, metadataAccept, 0)
}

func (b *bench) listMetadataProtobuf(ctx context.Context, _ int) error {
	return b.listAs(ctx, metadataProtobufAccept, 0)
}

// listAs lists everything with the given Accept header, in pages of limit
// (0: one request), following continue tokens.
func (b *bench) listAs(ctx context.Context, accept string, limit int64) error {
	q := url.Values{}
	if b.selector != "" {
		q.Set("labelSelector", b.selector)
	}
	if limit > 0 {
		q.Set("limit", strconv.FormatInt(limit, 10))
	}
	for {
		data, release, err := b.doAccept(ctx, http.MethodGet, b.collectionPath()+"?"+q.Encode(), nil, http.StatusOK, accept)
		if err != nil {
			return err
		}
		cont := continueOf(data)
		release()
		if cont == "" {
			return nil
		}
		q.Set("continue", cont)
	}
}

// continueOf finds a list's metadata.continue by a byte search in the
// answer's head: list metadata comes before the items or rows.
func continueOf(data []byte) string {
	const key = `"continue":"`
	head := data[:min(len(data), 4096)]
	i := bytes.Index(head, []byte(key))
	if i < 0 {
		return ""
	}
	rest := data[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

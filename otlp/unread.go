package otlp

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// The decoder keeps only what the mapping reads, but it must not accept a
// body that protobuf would refuse: a cut-off link, scope or event
// attribute is a malformed request even though no field of it is kept.
// The fields it does not read are therefore checked, not decoded: their
// wire types against OTLP's schema (as pdata, the Collector's decoder,
// refuses a known field of the wrong type) and, for messages, their
// structure, recursively. FuzzDecode holds the decoder to the official
// module (go.opentelemetry.io/proto/otlp) on this.

// unreadField is what OTLP's schema says of a field the decoder skips:
// its wire type and, for a message, the message's own fields.
type unreadField struct {
	typ protowire.Type
	msg *unreadMsg
}

// unreadMsg is one message of OTLP's schema (trace.proto, common.proto,
// resource.proto), indexed by field number, as far as the skipped
// fields need it.
type unreadMsg struct {
	name   string
	fields []unreadField // by field number
	names  []string      // by field number; "": not in the schema
}

func (m *unreadMsg) field(num protowire.Number) (unreadField, string, bool) {
	if int(num) >= len(m.fields) || m.names[num] == "" {
		return unreadField{}, "", false
	}
	return m.fields[num], m.names[num], true
}

// schemaMsg builds an unreadMsg from (number, name, wire type, message)
// entries.
func schemaMsg(name string, entries ...any) *unreadMsg {
	m := &unreadMsg{name: name}
	for i := 0; i < len(entries); i += 4 {
		num := entries[i].(int)
		for len(m.fields) <= num {
			m.fields, m.names = append(m.fields, unreadField{}), append(m.names, "")
		}
		m.names[num] = entries[i+1].(string)
		m.fields[num].typ = entries[i+2].(protowire.Type)
		m.fields[num].msg, _ = entries[i+3].(*unreadMsg)
	}
	return m
}

const (
	bytesT   = protowire.BytesType
	varintT  = protowire.VarintType
	fixed32T = protowire.Fixed32Type
	fixed64T = protowire.Fixed64Type
)

var (
	anyValueMsg, arrayValueMsg, keyValueListMsg, keyValueMsg *unreadMsg
	scopeMsg, linkMsg, eventMsg, resourceMsg, entityRefMsg   *unreadMsg
	resourceSpansMsg, scopeSpansMsg, spanMsg                 *unreadMsg
)

func init() {
	// The recursive messages are made first and filled in after.
	anyValueMsg, arrayValueMsg, keyValueListMsg, keyValueMsg = &unreadMsg{}, &unreadMsg{}, &unreadMsg{}, &unreadMsg{}
	*keyValueMsg = *schemaMsg("KeyValue", 1, "key", bytesT, nil, 2, "value", bytesT, anyValueMsg)
	*anyValueMsg = *schemaMsg("AnyValue", 1, "string_value", bytesT, nil, 2, "bool_value", varintT, nil,
		3, "int_value", varintT, nil, 4, "double_value", fixed64T, nil, 5, "array_value", bytesT, arrayValueMsg,
		6, "kvlist_value", bytesT, keyValueListMsg, 7, "bytes_value", bytesT, nil, 8, "string_value_strindex", varintT, nil)
	*arrayValueMsg = *schemaMsg("ArrayValue", 1, "values", bytesT, anyValueMsg)
	*keyValueListMsg = *schemaMsg("KeyValueList", 1, "values", bytesT, keyValueMsg)
	scopeMsg = schemaMsg("InstrumentationScope", 1, "name", bytesT, nil, 2, "version", bytesT, nil,
		3, "attributes", bytesT, keyValueMsg, 4, "dropped_attributes_count", varintT, nil)
	entityRefMsg = schemaMsg("EntityRef", 1, "schema_url", bytesT, nil, 2, "type", bytesT, nil,
		3, "id_keys", bytesT, nil, 4, "description_keys", bytesT, nil)
	resourceMsg = schemaMsg("Resource", 1, "attributes", bytesT, keyValueMsg,
		2, "dropped_attributes_count", varintT, nil, 3, "entity_refs", bytesT, entityRefMsg)
	linkMsg = schemaMsg("Link", 1, "trace_id", bytesT, nil, 2, "span_id", bytesT, nil, 3, "trace_state", bytesT, nil,
		4, "attributes", bytesT, keyValueMsg, 5, "dropped_attributes_count", varintT, nil, 6, "flags", fixed32T, nil)
	eventMsg = schemaMsg("Event", 1, "time_unix_nano", fixed64T, nil, 2, "name", bytesT, nil,
		3, "attributes", bytesT, keyValueMsg, 4, "dropped_attributes_count", varintT, nil)
	spanMsg = schemaMsg("Span", 3, "trace_state", bytesT, nil, 10, "dropped_attributes_count", varintT, nil,
		12, "dropped_events_count", varintT, nil, 13, "links", bytesT, linkMsg, 14, "dropped_links_count", varintT, nil)
	scopeSpansMsg = schemaMsg("ScopeSpans", 1, "scope", bytesT, scopeMsg, 3, "schema_url", bytesT, nil)
	resourceSpansMsg = schemaMsg("ResourceSpans", 3, "schema_url", bytesT, nil)
}

// maxDepth bounds how deeply messages nest, as protobuf-go's default
// recursion limit does: an AnyValue of arrays of arrays may not run the
// stack down. Depths count from the request's 0, so a message at depth
// maxDepth is the limit's first one past it (protobuf-go counts the
// request as the first of its 10,000).
const maxDepth = protowire.DefaultRecursionLimit

var errTooDeep = errors.New("messages nested too deeply")

// checkUnread checks a field of msg the decoder does not read: a known
// field must have its wire type, and a message must be well formed down
// to its last field. depth is the nesting of the message f is in.
func checkUnread(msg *unreadMsg, f *field, depth int) error {
	k, name, ok := msg.field(f.num)
	if !ok {
		return nil // not in the schema: protobuf keeps it as unknown bytes
	}
	if f.typ != k.typ {
		return wireError(msg.name, name, f.typ)
	}
	if k.msg == nil {
		return nil
	}
	if err := checkMessage(k.msg, f.b, depth+1); err != nil {
		return fmt.Errorf("%s.%s: %w", msg.name, name, err)
	}
	return nil
}

// checkMessage checks that b is a well-formed msg, reading nothing.
func checkMessage(msg *unreadMsg, b []byte, depth int) error {
	if depth >= maxDepth {
		return errTooDeep
	}
	var f field
	var err error
	for len(b) > 0 {
		if b, err = next(b, &f); err != nil {
			return err
		}
		if err := checkUnread(msg, &f, depth); err != nil {
			return err
		}
	}
	return nil
}

package encrypt

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// The field-level form (AlgorithmAES256GCMFields): only named top-level fields of a
// JSON object body are encrypted, each value replaced by a JSON string, the base64 of
// its AES-GCM ciphertext and tag; the other fields stay readable (for routing by a JSON
// field, or a person reading a dead letter). Sidekiq Enterprise's "secret bag" is the
// model. The object is re-encoded with its keys sorted, by encryption and decryption.

// objectOf parses body as a JSON object.
func objectOf(body string) (map[string]json.RawMessage, error) {
	var object map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &object); err != nil || object == nil {
		return nil, fmt.Errorf("the body is not a JSON object")
	}
	return object, nil
}

// present returns the names of fields that object has, in the order of fields.
func present(object map[string]json.RawMessage, fields []string) []string {
	var out []string
	for _, name := range fields {
		if _, ok := object[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

// fieldNonce is the nonce of field i (from 0): the header's nonce with i+1 XORed into
// its last 4 bytes, so no two fields of a message share a nonce.
func fieldNonce(nonce []byte, i int) []byte {
	out := append([]byte(nil), nonce...)
	last := binary.BigEndian.Uint32(out[nonceSize-4:])
	binary.BigEndian.PutUint32(out[nonceSize-4:], last^uint32(i+1))
	return out
}

// fieldAAD is the additional data of one field: the body's, with the field's name.
func fieldAAD(header []byte, binding Binding, name string) []byte {
	out := aad(header, binding)
	out = binary.BigEndian.AppendUint32(out, uint32(len(name)))
	return append(out, name...)
}

// sealFields encrypts h.Fields of object under dataKey and returns the new body.
func sealFields(dataKey []byte, h Header, binding Binding, object map[string]json.RawMessage) (string, error) {
	aead, err := newGCM(dataKey)
	if err != nil {
		return "", err
	}
	header := h.Marshal()
	for i, name := range h.Fields {
		sealed := aead.Seal(nil, fieldNonce(h.Nonce, i), object[name], fieldAAD(header, binding, name))
		object[name], err = json.Marshal(base64.StdEncoding.EncodeToString(sealed))
		if err != nil {
			return "", err
		}
	}
	body, err := json.Marshal(object)
	return string(body), err
}

// openFields decrypts the fields h names in body.
func openFields(dataKey []byte, h Header, binding Binding, body string) ([]byte, error) {
	object, err := objectOf(body)
	if err != nil {
		return nil, &MalformedError{Reason: err.Error() + " (its header names encrypted fields)"}
	}
	aead, err := newGCM(dataKey)
	if err != nil {
		return nil, err
	}
	header := h.Marshal()
	for i, name := range h.Fields {
		var text string
		if err := json.Unmarshal(object[name], &text); err != nil {
			return nil, &MalformedError{Reason: fmt.Sprintf("the encrypted field %q is missing or not a string", name)}
		}
		sealed, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return nil, &MalformedError{Reason: fmt.Sprintf("the encrypted field %q is not base64", name)}
		}
		plaintext, err := aead.Open(nil, fieldNonce(h.Nonce, i), sealed, fieldAAD(header, binding, name))
		if err != nil {
			return nil, errTampered
		}
		object[name] = plaintext
	}
	return json.Marshal(object)
}

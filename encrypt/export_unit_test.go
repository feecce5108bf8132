package encrypt

import "encoding/base64"

// versioned returns the header's attribute value with another version byte.
func (h Header) versioned(version byte) string {
	raw := h.marshal()
	raw[0] = version
	return encode(raw)
}

func encode(raw []byte) string { return base64.StdEncoding.EncodeToString(raw) }

"""The server and client features (issue 34): tools (names, schemas, structured results), content items,
resources, pagination, elicitation. Judged by check/features.py."""

from . import CLIENT, MUST, MUST_NOT, RECEIVER, SERVER, SHOULD, Requirement, quote, since

_TOOLS = "tools"
_CONTENT = "content"
_PAGES = "pagination"
_ELICIT = "elicitation"

REQUIREMENTS = [
    Requirement(
        "tool-input-schema", _TOOLS, SERVER, since("2025-11-25", MUST),
        quote("2025-11-25", "Server › Tools › Tool", "inputSchema: … MUST be a valid JSON Schema object (not null)"),
        "a tool in tools/list whose inputSchema is not an object, or not a valid schema of its dialect (the "
        "jsonschema library's metaschema check; 2020-12 when it declares no $schema)", ("m:tools/list",)),
    Requirement(
        "tool-output-conforms", _TOOLS, SERVER, since("2025-06-18", MUST),
        quote("2025-11-25", "Server › Tools › Output Schema", "Servers MUST provide structured results that conform "
              "to this schema."),
        "a tools/call result (not isError) of a tool listed with an outputSchema, without structuredContent or "
        "with structuredContent the schema does not validate (jsonschema, the schema's own dialect)",
        ("output-schema-call",)),
    Requirement(
        "structured-content-text", _TOOLS, SERVER, since("2025-06-18", SHOULD),
        quote("2025-11-25", "Server › Tools › Structured Content", "For backwards compatibility, a tool that returns "
              "structured content SHOULD also return the serialized JSON in a TextContent block."),
        "a tools/call result with structuredContent and no text content item", ("structured-content",)),
    Requirement(
        "tool-name-length", _TOOLS, SERVER, since("2025-11-25", SHOULD),
        quote("2025-11-25", "Server › Tools › Tool Names", "Tool names SHOULD be between 1 and 128 characters in "
              "length (inclusive)."),
        "a tool name that is empty or longer than 128 characters (the naming guidance is a SHOULD)",
        ("m:tools/list",)),
    Requirement(
        "tool-name-characters", _TOOLS, SERVER, since("2025-11-25", SHOULD),
        quote("2025-11-25", "Server › Tools › Tool Names", "The following SHOULD be the only allowed characters: "
              "uppercase and lowercase ASCII letters (A-Z, a-z), digits (0-9), underscore (_), hyphen (-), and dot "
              "(.)"),
        "a tool name with another character (a space, a comma, a slash…)", ("m:tools/list",)),
    Requirement(
        "tool-name-unique", _TOOLS, SERVER, since("2025-11-25", SHOULD),
        quote("2025-11-25", "Server › Tools › Tool Names", "Tool names SHOULD be unique within a server."),
        "two tools of the same name in one tools/list answer, or across the pages of one listing",
        ("m:tools/list",)),
    Requirement(
        "image-base64", _CONTENT, RECEIVER, since("2024-11-05", MUST),
        quote("2025-11-25", "Server › Prompts › Image Content", "The image data MUST be base64-encoded and include a "
              "valid MIME type."),
        "an image content item (in a tool result, a prompt, a sampling answer) whose data is not base64 or whose "
        "mimeType is not type/subtype", ("image",)),
    Requirement(
        "audio-base64", _CONTENT, RECEIVER, since("2025-03-26", MUST),
        quote("2025-11-25", "Server › Prompts › Audio Content", "The audio data MUST be base64-encoded and include a "
              "valid MIME type."),
        "an audio content item whose data is not base64 or whose mimeType is not type/subtype", ("audio",)),
    Requirement(
        "embedded-resource-fields", _CONTENT, RECEIVER, since("2024-11-05", MUST),
        quote("2025-11-25", "Server › Prompts › Embedded Resources", "Resources can contain either text or binary "
              "(blob) data and MUST include: A valid resource URI; The appropriate MIME type; Either text content or "
              "base64-encoded blob data"),
        "an embedded resource item without a uri, or with neither text nor a base64 blob (a missing mimeType is "
        "not judged: the schema makes it optional)", ("embedded-resource",)),
    Requirement(
        "resource-blob-base64", _CONTENT, SERVER, since("2024-11-05", MUST),
        quote("2025-11-25", "Server › Resources › Security Considerations", "Binary data MUST be properly encoded"),
        "a resources/read content whose blob is not base64", ("m:resources/read",)),
    Requirement(
        "cursor-opaque", _PAGES, CLIENT, since("2024-11-05", MUST),
        quote("2025-11-25", "Server › Utilities › Pagination › Implementation Guidelines", "Clients MUST treat "
              "cursors as opaque tokens: Don't make assumptions about cursor format; Don't attempt to parse or "
              "modify cursors; Don't persist cursors across sessions"),
        "a list request whose cursor the server never issued as nextCursor in the session", ("cursor",)),
    Requirement(
        "cursor-invalid-error", _PAGES, SERVER, since("2024-11-05", SHOULD),
        quote("2025-11-25", "Server › Utilities › Pagination › Error Handling", "Invalid cursors SHOULD result in an "
              "error with code -32602 (Invalid params)."),
        "a list request with a cursor the server never issued answered with a result, or another error code",
        ("unissued-cursor",)),
    Requirement(
        "elicitation-mode-supported", _ELICIT, SERVER, since("2025-11-25", MUST_NOT),
        quote("2025-11-25", "Client › Elicitation › Capabilities", "Servers MUST NOT send elicitation requests with "
              "modes that are not supported by the client."),
        "elicitation/create in url mode to a client whose elicitation capability has no url (an empty capability "
        "is form mode)", ("m:elicitation/create",)),
    Requirement(
        "elicitation-url-valid", _ELICIT, SERVER, since("2025-11-25", MUST),
        quote("2025-11-25", "Client › Elicitation › URL Mode Elicitation Requests", "The url parameter MUST contain "
              "a valid URL."),
        "a url-mode elicitation/create whose url has no scheme or no host", ("elicitation-url",)),
]

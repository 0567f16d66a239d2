"""The server and client features (issue 34): tools (names, schemas, structured results), content items,
resources, pagination, elicitation. Judged by check/features.py."""

from . import CLIENT, MAY, MUST, MUST_NOT, RECEIVER, SENDER, SERVER, SHOULD, SHOULD_NOT, Requirement, quote, since

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
        "elicitation-form-fields", _ELICIT, SERVER, since("2025-11-25", MUST),
        quote("2025-11-25", "Client › Elicitation › Protocol Messages › Form Mode Elicitation Requests", "Form mode "
              "elicitation requests MUST either specify mode: \"form\" or omit the mode field, and include these "
              "additional parameters: … requestedSchema"),
        "an elicitation/create in form mode (or without a mode) whose requestedSchema is not an object",
        ("m:elicitation/create",)),
    Requirement(
        "elicitation-schema-flat", _ELICIT, SERVER, since("2025-06-18", MUST),
        quote("2025-11-25", "Client › Elicitation › Protocol Messages › Form Mode Elicitation Requests › Requested "
              "Schema", "To simplify client user experience, form mode elicitation schemas are limited to flat "
              "objects with primitive properties only."),
        "a form-mode requestedSchema with a property that is an object, has properties of its own, or is an array "
        "other than 2025-11-25's multi-select (items with enum or anyOf); 2025-06-18 says it in other words (\"To "
        "simplify implementation for clients, elicitation schemas are limited to flat objects with primitive "
        "properties only\"); the sentence has no keyword, the schema's PrimitiveSchemaDefinition admits nothing "
        "else", ("m:elicitation/create",)),
    Requirement(
        "elicitation-url-fields", _ELICIT, SERVER, since("2025-11-25", MUST),
        quote("2025-11-25", "Client › Elicitation › Protocol Messages › URL Mode Elicitation Requests", "URL mode "
              "elicitation requests MUST specify mode: \"url\", a message, and include these additional parameters: "
              "… url … elicitationId"),
        "a url-mode elicitation/create without a string message, url or elicitationId", ("elicitation-url",)),
    Requirement(
        "elicitation-url-valid", _ELICIT, SERVER, since("2025-11-25", MUST),
        quote("2025-11-25", "Client › Elicitation › URL Mode Elicitation Requests", "The url parameter MUST contain "
              "a valid URL."),
        "a url-mode elicitation/create whose url has no scheme or no host", ("elicitation-url",)),
]

_PROMPTS = "prompts"
_LOGGING = "logging"
_COMPLETION = "completion"
_RESOURCES = "resources"
_ROOTS = "roots"
_SAMPLING = "sampling"
_UNTIL_2025_11 = "2025-11-25"

REQUIREMENTS += [
    Requirement(
        "tool-inputs-validated", _TOOLS, SERVER, since("2024-11-05", MUST),
        quote("2025-11-25", "Server › Tools › Security Considerations", "Servers MUST: Validate all tool inputs"),
        "a tools/call whose arguments the tool's listed inputSchema does not validate (jsonschema, the schema's own "
        "dialect) answered with a success result: neither an error nor isError", ("m:tools/call",)),
    Requirement(
        "resource-uri-scheme", _RESOURCES, SERVER, since("2025-06-18", MUST),
        quote("2025-11-25", "Server › Resources › Common URI Schemes › Custom URI Schemes", "Custom URI schemes MUST "
              "be in accordance with RFC3986, taking the above guidance in to account."),
        "a resource in resources/list whose uri has no RFC 3986 scheme (letters, digits, +, -, . before a colon)",
        ("m:resources/list",)),
    Requirement(
        "resource-updated-subscribed", _RESOURCES, SERVER, since("2024-11-05", MAY, _UNTIL_2025_11),
        quote("2025-11-25", "Server › Resources › Subscriptions", "Clients can subscribe to specific resources and "
              "receive notifications when they change:"),
        "notifications/resources/updated for a uri the client never subscribed to (resources/subscribe) in the "
        "session, or unsubscribed from: said as an observation, the page names no keyword",
        ("m:notifications/resources/updated",), observation=True),
    Requirement(
        "prompt-errors-invalid-params", _PROMPTS, SERVER, since("2024-11-05", SHOULD),
        quote("2025-11-25", "Server › Prompts › Error Handling", "Servers SHOULD return standard JSON-RPC errors for "
              "common failure cases: … Missing required arguments: -32602 (Invalid params)"),
        "a prompts/get without an argument its prompt lists as required (prompts/list) answered with a result, or "
        "with an error code other than -32602", ("m:prompts/get",)),
    Requirement(
        "prompt-message-role", _PROMPTS, SERVER, since("2024-11-05", MUST),
        quote("2025-11-25", "Server › Prompts › Data Types › PromptMessage",
              "role: Either \"user\" or \"assistant\" to indicate "
              "the speaker"),
        "a prompts/get message whose role is neither user nor assistant (the schema's Role admits only these)",
        ("m:prompts/get",)),
    Requirement(
        "log-level-valid", _LOGGING, SENDER, since("2024-11-05", MUST),
        quote("2025-11-25", "Server › Utilities › Logging › Log Levels", "The protocol follows the standard syslog "
              "severity levels specified in RFC 5424:"),
        "a notifications/message (the server) or logging/setLevel (the client) whose level is not one of debug, "
        "info, notice, warning, error, critical, alert, emergency", ("m:notifications/message", "m:logging/setLevel")),
    Requirement(
        "log-level-invalid-params", _LOGGING, SERVER, since("2024-11-05", SHOULD, _UNTIL_2025_11),
        quote("2025-11-25", "Server › Utilities › Logging › Error Handling", "Servers SHOULD return standard JSON-RPC "
              "errors for common failure cases: Invalid log level: -32602 (Invalid params)"),
        "a logging/setLevel with a level outside the eight answered with a result or an error code other than "
        "-32602 (2026-07-28 drops the sentence with logging/setLevel)", ("m:logging/setLevel",)),
    Requirement(
        "completion-values-max", _COMPLETION, SERVER, since("2024-11-05", MUST),
        quote("2025-11-25", "Schema › CompleteResult", "An array of completion values. Must not exceed 100 items."),
        "a completion/complete result with more than 100 values (the schema of every revision says it; the page's "
        "\"Maximum 100 items per response\" from 2025-03-26)", ("m:completion/complete",)),
    Requirement(
        "completion-result-fields", _COMPLETION, SERVER, since("2024-11-05", MUST),
        quote("2025-11-25", "Server › Utilities › Completion › Data Types › CompleteResult", "completion: Object "
              "containing: values: Array of suggestions (max 100)"),
        "a completion/complete result without a completion object whose values is an array of strings",
        ("m:completion/complete",)),
    Requirement(
        "root-uri-file", _ROOTS, CLIENT, since("2024-11-05", MUST),
        quote("2025-11-25", "Client › Roots › Data Types › Root", "uri: Unique identifier for the root. This MUST be "
              "a file:// URI in the current specification."),
        "a roots/list result with a root whose uri does not start with file://", ("m:roots/list",)),
    Requirement(
        "roots-errors-method-not-found", _ROOTS, CLIENT, since("2024-11-05", SHOULD, _UNTIL_2025_11),
        quote("2025-11-25", "Client › Roots › Error Handling", "Clients SHOULD return standard JSON-RPC errors for "
              "common failure cases: Client does not support roots: -32601 (Method not found)"),
        "a roots/list to a client that declared no roots capability answered with an error code other than -32601 "
        "(2026-07-28's page drops the sentence: roots come through multi round-trip requests)",
        ("m:roots/list",)),
    Requirement(
        "sampling-tool-results-only", _SAMPLING, SERVER, since("2025-11-25", MUST),
        quote("2025-11-25", "Client › Sampling › Message Content Constraints › Tool Result Messages",
              "When a user message contains tool results (type: "
              "\"tool_result\"), it MUST contain ONLY tool results."),
        "a sampling/createMessage user message that mixes tool_result items with other content", ("tool-result",)),
    Requirement(
        "sampling-tool-use-answered", _SAMPLING, SERVER, since("2025-11-25", MUST),
        quote("2025-11-25", "Client › Sampling › Message Content Constraints › Tool Use and Result Balance",
              "When using tool use in sampling, every assistant message "
              "containing ToolUseContent blocks MUST be followed by a user message that consists entirely of "
              "ToolResultContent blocks, with each tool use (e.g. with id: $id) matched by a corresponding tool "
              "result (with toolUseId: $id), before any other message."),
        "a sampling/createMessage whose assistant message with tool_use items is followed by anything but a user "
        "message of tool_result items answering each tool use's id", ("tool-use",)),
    Requirement(
        "sampling-include-context", _SAMPLING, SERVER, since("2025-11-25", SHOULD_NOT),
        quote("2025-11-25", "Client › Sampling › Capabilities", "Servers SHOULD avoid using these values (e.g. can "
              "just omit includeContext since it defaults to \"none\"), and SHOULD NOT use them unless the client "
              "declares sampling.context capability."),
        "a sampling/createMessage with includeContext thisServer or allServers to a client whose sampling capability "
        "has no context", ("m:sampling/createMessage",)),
    Requirement(
        "resource-template-fields", _RESOURCES, SERVER, since("2024-11-05", MUST),
        quote("2025-11-25", "Server › Resources › Resource Templates", "Resource templates allow servers to expose "
              "parameterized resources using URI templates."),
        "a resources/templates/list result with a template whose uriTemplate or name is missing or not a string: the "
        "sentence names no keyword, the level rests on the schema (ResourceTemplate requires both, every revision)",
        ("m:resources/templates/list",)),
    Requirement(
        "resource-link-fields", _CONTENT, RECEIVER, since("2025-06-18", MUST),
        quote("2025-11-25", "Server › Tools › Tool Result › Resource Links", "A tool MAY return links to Resources, "
              "to provide additional context or data. In this case, the tool will return a URI that can be "
              "subscribed to or fetched by the client:"),
        "a resource_link content item (a tool result, a prompt message) whose uri or name is missing or not a "
        "string: the MAY is the tool's choice to link, the level rests on the schema (ResourceLink requires uri and "
        "name, from 2025-06-18 where it appears)", ("resource-link",)),
    Requirement(
        "content-item-type", _CONTENT, RECEIVER, since("2024-11-05", MUST),
        quote("2025-11-25", "Server › Tools › Tool Result", "Unstructured content is returned in the content field "
              "of a result, and can contain multiple content items of different types:"),
        "a content item (a tool result, a prompt message, a sampling answer) with no type, or a type that is not a "
        "string: the level rests on the schema (every ContentBlock has a string type, text, image, audio, "
        "resource_link or resource); a type this revision does not know is not judged here",
        ("m:tools/call",)),
    Requirement(
        "tool-is-error-boolean", _TOOLS, SERVER, since("2024-11-05", MUST),
        quote("2025-11-25", "Schema › CallToolResult › isError", "Whether the tool call ended in an error. If not "
              "set, this is assumed to be false (the call was successful)."),
        "a tools/call result whose isError is present and not a boolean: the level rests on the schema (isError: "
        "boolean); whether an error came from the tool, which the description's SHOULD is about, is not on the wire",
        ("m:tools/call",)),
]

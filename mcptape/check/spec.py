"""The spec clause each finding rests on, quoted from the MCP specification (2025-11-25 unless the rule is about
another revision; docs/rules.md says what each rule rests on and whom it blames)."""

CANCELLATION = ('2025-11-25 Utilities › Cancellation › Behavior Requirements: receivers SHOULD "Not send a response '
                'for the cancelled request"; "The sender of the cancellation notification SHOULD ignore any response '
                'to the request that arrives afterward"')
CANCELLATION_2026 = ('2026-07-28 Transports › Streamable HTTP › Cancellation: "Closing the SSE response stream MUST be '
                     'treated by the server as cancellation of that request"; servers SHOULD "Not send a response '
                     'for the cancelled request"')
SESSION_404 = ('2025-11-25 Transports › Streamable HTTP › Session Management: "The server MAY terminate the session at '
               'any time, after which it MUST respond to requests containing that session ID with HTTP 404 Not Found"')
REINITIALIZE = ('2025-11-25 Transports › Streamable HTTP › Session Management: "When a client receives HTTP 404 in '
                'response to a request containing an MCP-Session-Id, it MUST start a new session by sending a new '
                'InitializeRequest without a session ID attached"')
# What dead-session-reuse rests on when the session died by anything but a 404: the spec's one rule for the client
# is about 404, and it says nothing of a 401 or 400 refusal or of a session the client deleted itself.
REUSED_AFTER_REFUSAL = ('2025-11-25 Transports › Streamable HTTP › Session Management: "When a client receives HTTP '
                        '404 in response to a request containing an MCP-Session-Id, it MUST start a new session"; for '
                        'a session refused otherwise (401, 400) or deleted by the client the spec says nothing more, '
                        'and an id the server no longer knows can only be refused again')
RESPONSE = ('2025-11-25 Basic › Messages › Responses: "Responses are sent in reply to requests"; Transports › '
            'Streamable HTTP: "The SSE stream SHOULD eventually include a JSON-RPC response for the JSON-RPC request '
            'sent in the POST body"')
STDIO_RESPONSE = '2025-11-25 Basic › Messages › Requests / Responses: every request gets a response with the same id'
STDIO_SHUTDOWN = ('2025-11-25 Basic › Lifecycle › Shutdown › stdio: the client shuts down by closing the server\'s '
                  'stdin (then waits for it to exit); a side whose stream is closed can no longer answer')
REQUEST_ID = ('2025-11-25 Basic › Messages › Requests: "The request ID MUST NOT have been previously used by the '
              'requestor within the same session"')
RESPONSE_ID = '2025-11-25 Basic › Messages › Responses: "Responses MUST include the same ID as the request they correspond to"'
PROGRESS = ('2025-11-25 Utilities › Progress: "The progress value MUST increase with each notification"; "Progress '
            'notifications MUST stop after completion"')
INITIALIZE_FIRST = ('2025-11-25 Basic › Lifecycle › Initialization: "The client SHOULD NOT send requests other than '
                    'pings before the server has responded to the initialize request"')
SESSION_HEADER = ('2025-11-25 Transports › Streamable HTTP › Session Management: clients "MUST include it in the '
                  'MCP-Session-Id header on all of their subsequent HTTP requests"')
VERSION_HEADER = ('2025-11-25 Transports › Streamable HTTP › Protocol Version Header: "the client MUST include the '
                  'MCP-Protocol-Version: <protocol-version> HTTP header on all subsequent requests"')
MALFORMED_STDIO = ('2025-11-25 Transports › stdio: "The server MUST NOT write anything to its stdout that is not a '
                   'valid MCP message"; "The client MUST NOT write anything to the server\'s stdin that is not a valid '
                   'MCP message"')
MALFORMED_HTTP = ('2025-11-25 Transports › Streamable HTTP › Sending Messages to the Server: the body of a POST "MUST '
                  'be a single JSON-RPC request, notification, or response"')
MALFORMED_MESSAGE = ('2025-11-25 Basic › Messages: every message is a JSON-RPC 2.0 request, response or notification '
                     '("jsonrpc": "2.0", a string or integer id, a method, a result or an error)')
ACCEPTED_202 = ('2025-11-25 Transports › Streamable HTTP › Sending Messages to the Server: "If the input is a JSON-RPC '
                'request, the server MUST either return Content-Type: text/event-stream … or Content-Type: '
                'application/json"; 202 Accepted is for notifications and responses')
GET_STREAM = ('2025-11-25 Transports › Streamable HTTP › Listening for Messages from the Server: "The server MUST NOT '
              'send a JSON-RPC response on the stream unless resuming a stream associated with a previous client '
              'request"')
RESUME = ('2025-11-25 Transports › Streamable HTTP › Sending Messages to the Server / Resumability: after an event '
          'with an id the server "MAY close the connection (without terminating the SSE stream)"; to resume, the client '
          '"SHOULD issue an HTTP GET to the MCP endpoint, and include the Last-Event-ID header"')
HEADERS_2026 = ('2026-07-28 Transports › Streamable HTTP › Standard headers: servers MUST validate that Mcp-Method and '
                'Mcp-Name match the body ("servers MUST decode encoded values … before comparing them to the body '
                'value"), and MCP-Protocol-Version MUST equal _meta["io.modelcontextprotocol/protocolVersion"]')
PARAM_HEADERS_2026 = ('2026-07-28 Transports › Streamable HTTP › Server Behavior for Custom Headers: "Any server that '
                      'processes the message body MUST validate that encoded header values, after decoding if '
                      'Base64-encoded, match the corresponding values in the request body"; a client that omits the '
                      'header while the value is in the body is "Non-conforming"')
HEADER_ENCODING = ('2026-07-28 Transports › Streamable HTTP › Value Encoding: "When a value cannot be safely '
                   'represented as a plain ASCII header value (e.g., it contains non-ASCII characters, control '
                   'characters, or has leading/trailing whitespace), clients MUST use Base64 encoding of the UTF-8 '
                   'representation with the following format: Mcp-Param-{Name}: =?base64?{Base64EncodedValue}?="; '
                   '"The same encoding rule applies to the Mcp-Name header value"')
FALLBACK_HTTP = ('2026-07-28 Transports › Streamable HTTP › Backward Compatibility: "If the body is empty or is not a '
                 'recognized modern JSON-RPC error, fall back to initialize and continue with the legacy version for '
                 'subsequent requests"')
FALLBACK_STDIO = ('2026-07-28 Transports › stdio › Backward Compatibility: "The server returns any other error, or '
                  'does not respond within a reasonable timeout: the server is legacy. Fall back to the initialize '
                  'handshake"; "The fallback MUST NOT be keyed to one specific error code"')
SSE_DETECTION = ('2026-07-28 Transports › Streamable HTTP › Backward Compatibility › HTTP+SSE Transport: "If it fails '
                 'with HTTP status code 400 Bad Request, 404 Not Found, or 405 Method Not Allowed and the response '
                 'body is not a recognized modern JSON-RPC error [...] Issue a GET request to the server URL, '
                 'expecting that this will open an SSE stream and return an endpoint event as the first event"')
STAY_MODERN = ('2026-07-28 Transports › Streamable HTTP › Backward Compatibility: "If the body contains a recognized '
               'modern JSON-RPC error, the server speaks a modern version of MCP — retry using the advertised '
               'supported versions or correct the request, rather than falling back"; stdio: "Do not fall back to '
               'initialize"')
DISCOVER = ('2026-07-28 Server › Discovery: "server/discover lets a client query a server\'s supported protocol '
            'versions, capabilities, and identity before sending any other requests. Servers MUST implement it"')
AUTH = '2025-11-25 Basic › Authorization: a 401 or 403 means the request\'s credentials were refused'
DEAD_ID = ('An identifier issued by a server lives as long as the server keeps it; reusing one that died with an '
           'earlier session or process gets "not found"')
CAPTURE = 'not a protocol rule: the recording does not show how this ended'

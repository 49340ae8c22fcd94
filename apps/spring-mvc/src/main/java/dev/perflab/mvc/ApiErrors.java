package dev.perflab.mvc;

import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import dev.perflab.mvc.Model.ApiError;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Type;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.core.StandardHost;
import org.apache.catalina.valves.ErrorReportValve;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.TypeMismatchException;
import org.springframework.boot.web.error.ErrorAttributeOptions;
import org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.boot.web.servlet.error.DefaultErrorAttributes;
import org.springframework.context.MessageSourceResolvable;
import org.springframework.context.annotation.Bean;
import org.springframework.core.MethodParameter;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpInputMessage;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageConverter;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.validation.BindException;
import org.springframework.validation.FieldError;
import org.springframework.web.ErrorResponse;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.request.WebRequest;
import org.springframework.web.method.annotation.HandlerMethodValidationException;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.servlet.mvc.method.annotation.RequestBodyAdviceAdapter;

/**
 * Every error answers {"status": code, "errors": [...]} (apps/contract/README.md): validation,
 * unreadable bodies, bodies over 64 KiB, and Spring's own 404/405/415 alike.
 */
@RestControllerAdvice
class ApiErrors extends RequestBodyAdviceAdapter {

    static final int MAX_BODY_BYTES = 64 * 1024;
    private static final String TOO_LARGE = "body: must not be larger than " + MAX_BODY_BYTES + " bytes";
    private static final Logger LOG = LoggerFactory.getLogger(ApiErrors.class);

    /** Thrown before or while reading a body past the limit; Spring wraps it in HttpMessageNotReadableException. */
    static final class BodyTooLargeException extends IOException {
        BodyTooLargeException() {
            super(TOO_LARGE);
        }
    }

    /** Bean Validation of path variables and parameters (Spring's built-in method validation). */
    @ExceptionHandler
    ResponseEntity<ApiError> invalidParameters(HandlerMethodValidationException e) {
        return badRequest(e.getParameterValidationResults().stream()
                .flatMap(result -> result.getResolvableErrors().stream()
                        .map(error -> name(error, result.getMethodParameter().getParameterName())
                                + ": " + error.getDefaultMessage()))
                .toList());
    }

    /** Bean Validation of a @Valid body. */
    @ExceptionHandler
    ResponseEntity<ApiError> invalidBody(BindException e) {
        return badRequest(e.getFieldErrors().stream()
                .map(error -> error.getField() + ": " + error.getDefaultMessage()).toList());
    }

    @ExceptionHandler
    ResponseEntity<ApiError> wrongType(TypeMismatchException e) {
        return badRequest(List.of(e.getPropertyName() + ": invalid value '" + e.getValue() + "'"));
    }

    @ExceptionHandler
    ResponseEntity<ApiError> unreadableBody(HttpMessageNotReadableException e) {
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause instanceof BodyTooLargeException) {
                return error(HttpStatus.PAYLOAD_TOO_LARGE, TOO_LARGE);
            }
            if (cause instanceof JsonProcessingException json) {
                return badRequest(List.of(jsonMessage(json)));
            }
        }
        return badRequest(List.of("body: must be a JSON document"));
    }

    /**
     * Ours (a plain ResponseStatusException: 404 with what was not found) and Spring's own (404 no
     * route, 405, 406, 413, 415, ...), those with the status' reason phrase so both apps agree.
     */
    @ExceptionHandler
    ResponseEntity<ApiError> other(Exception e) {
        if (e instanceof ResponseStatusException rse && rse.getClass() == ResponseStatusException.class
                && rse.getReason() != null) {
            return error(rse.getStatusCode(), rse.getReason());
        }
        if (e instanceof ErrorResponse response) {
            HttpStatusCode status = response.getStatusCode();
            return error(status, status.value() == 413 ? TOO_LARGE : reason(status));
        }
        LOG.error("request failed", e);
        return error(HttpStatus.INTERNAL_SERVER_ERROR, reason(HttpStatus.INTERNAL_SERVER_ERROR));
    }

    /** Rejects a body over the limit before reading it (Content-Length), or while reading it (chunked). */
    @Override
    public boolean supports(MethodParameter parameter, Type type, Class<? extends HttpMessageConverter<?>> converter) {
        return true;
    }

    @Override
    public HttpInputMessage beforeBodyRead(HttpInputMessage message, MethodParameter parameter, Type type,
            Class<? extends HttpMessageConverter<?>> converter) throws IOException {
        if (message.getHeaders().getContentLength() > MAX_BODY_BYTES) {
            throw new BodyTooLargeException();
        }
        InputStream limited = new FilterInputStream(message.getBody()) {
            private long read;

            @Override
            public int read() throws IOException {
                int b = super.read();
                count(b < 0 ? 0 : 1);
                return b;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                return count(super.read(b, off, len));
            }

            private int count(int n) throws IOException {
                read += Math.max(n, 0);
                if (read > MAX_BODY_BYTES) {
                    throw new BodyTooLargeException();
                }
                return n;
            }
        };
        HttpHeaders headers = message.getHeaders();
        return new HttpInputMessage() {
            @Override
            public InputStream getBody() {
                return limited;
            }

            @Override
            public HttpHeaders getHeaders() {
                return headers;
            }
        };
    }

    /** Errors that never reach a controller (e.g. rejected by Tomcat) get the same body via /error. */
    @Bean
    static DefaultErrorAttributes errorAttributes() {
        return new DefaultErrorAttributes() {
            @Override
            public Map<String, Object> getErrorAttributes(WebRequest request, ErrorAttributeOptions options) {
                int status = (Integer) super.getErrorAttributes(request, options).getOrDefault("status", 500);
                return Map.of("status", status, "errors", List.of(reason(HttpStatusCode.valueOf(status))));
            }
        };
    }

    static String jsonMessage(JsonProcessingException e) {
        if (e instanceof JsonParseException) {
            return "body: malformed JSON";
        }
        if (e instanceof JsonMappingException mapping && !mapping.getPath().isEmpty()) {
            String field = mapping.getPath().stream()
                    .map(ref -> ref.getFieldName() != null ? ref.getFieldName() : String.valueOf(ref.getIndex()))
                    .collect(Collectors.joining("."));
            return field + (e instanceof UnrecognizedPropertyException ? ": unknown field" : ": invalid value");
        }
        return "body: must be a JSON object";
    }

    private static String name(MessageSourceResolvable error, String parameter) {
        return error instanceof FieldError field ? field.getField() : parameter;
    }

    static String reason(HttpStatusCode status) {
        HttpStatus known = HttpStatus.resolve(status.value());
        return known == null ? "error " + status.value() : known.getReasonPhrase().toLowerCase();
    }

    private static ResponseEntity<ApiError> badRequest(List<String> errors) {
        return error(HttpStatus.BAD_REQUEST, errors.stream().sorted().toList());
    }

    private static ResponseEntity<ApiError> error(HttpStatusCode status, String message) {
        return error(status, List.of(message));
    }

    /** JSON even when the request's Accept header does not list it: the error body is always JSON. */
    private static ResponseEntity<ApiError> error(HttpStatusCode status, List<String> messages) {
        return ResponseEntity.status(status).contentType(MediaType.APPLICATION_JSON)
                .body(new ApiError(status.value(), messages));
    }

    /**
     * Tomcat answers some bad requests itself, before Spring sees them (an encoded '/' or a broken
     * %-escape in the path): its error report valve writes the same JSON instead of an HTML page.
     */
    public static final class JsonErrorReportValve extends ErrorReportValve {
        @Override
        protected void report(Request request, Response response, Throwable throwable) {
            int status = response.getStatus();
            if (status < 400 || response.getContentWritten() > 0 || !response.setErrorReported()) {
                return;
            }
            try {
                response.setContentType("application/json");
                response.setCharacterEncoding("UTF-8");
                response.getReporter().write("{\"status\":" + status + ",\"errors\":[\""
                        + reason(HttpStatusCode.valueOf(status)) + "\"]}");
            } catch (IOException | IllegalStateException e) {
                // the response is already committed or closed: nothing more can be written
            }
        }
    }

    @Bean
    static WebServerFactoryCustomizer<TomcatServletWebServerFactory> jsonTomcatErrors() {
        return factory -> factory.addContextCustomizers(context ->
                ((StandardHost) context.getParent()).setErrorReportValveClass(JsonErrorReportValve.class.getName()));
    }
}

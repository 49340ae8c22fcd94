package dev.perflab.webflux;

import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import dev.perflab.webflux.Model.ApiError;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import io.netty.handler.codec.http.HttpHeaderNames;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.TypeMismatchException;
import org.springframework.boot.web.embedded.netty.NettyServerCustomizer;
import org.springframework.boot.web.error.ErrorAttributeOptions;
import org.springframework.boot.web.reactive.error.DefaultErrorAttributes;
import org.springframework.context.MessageSourceResolvable;
import org.springframework.context.annotation.Bean;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.validation.FieldError;
import org.springframework.web.ErrorResponse;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.bind.support.WebExchangeBindException;
import org.springframework.web.method.annotation.HandlerMethodValidationException;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebInputException;
import reactor.core.publisher.Mono;
import reactor.netty.http.server.HttpServerResponse;

/**
 * Every error answers {"status": code, "errors": [...]} (apps/contract/README.md): validation,
 * unreadable bodies, bodies over 64 KiB (spring.codec.max-in-memory-size: Spring's 413), and
 * Spring's own 404/405/415 alike (WebFlux hands errors of handler mapping to this advice too).
 */
@RestControllerAdvice
class ApiErrors {

    static final int MAX_BODY_BYTES = 64 * 1024;
    private static final String TOO_LARGE = "body: must not be larger than " + MAX_BODY_BYTES + " bytes";
    private static final Logger LOG = LoggerFactory.getLogger(ApiErrors.class);

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
    ResponseEntity<ApiError> invalidBody(WebExchangeBindException e) {
        return badRequest(e.getFieldErrors().stream()
                .map(error -> error.getField() + ": " + error.getDefaultMessage()).toList());
    }

    /** Wrong types in the path or query, and bodies that are not the expected JSON. */
    @ExceptionHandler
    ResponseEntity<ApiError> badInput(ServerWebInputException e) {
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause instanceof TypeMismatchException mismatch && e.getMethodParameter() != null) {
                return badRequest(List.of(e.getMethodParameter().getParameterName()
                        + ": invalid value '" + mismatch.getValue() + "'"));
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
            return error(rse.getStatusCode(), List.of(rse.getReason()));
        }
        if (e instanceof ErrorResponse response) {
            HttpStatusCode status = response.getStatusCode();
            return error(status, List.of(status.value() == 413 ? TOO_LARGE : reason(status)));
        }
        LOG.error("request failed", e);
        return error(HttpStatus.INTERNAL_SERVER_ERROR, List.of(reason(HttpStatus.INTERNAL_SERVER_ERROR)));
    }

    /** Errors that never reach the dispatcher (e.g. from a web filter) get the same body. */
    @Bean
    static DefaultErrorAttributes errorAttributes() {
        return new DefaultErrorAttributes() {
            @Override
            public Map<String, Object> getErrorAttributes(ServerRequest request, ErrorAttributeOptions options) {
                int status = (Integer) super.getErrorAttributes(request, options).getOrDefault("status", 500);
                return Map.of("status", status, "errors", List.of(reason(HttpStatusCode.valueOf(status))));
            }
        };
    }

    /**
     * Reactor Netty answers a request whose URI Spring cannot parse (a broken %-escape in the path)
     * with an empty 400 before any Spring code runs: give such answers the same JSON body.
     */
    @Bean
    static NettyServerCustomizer jsonBodyForEmptyErrors() {
        return server -> server.mapHandle((handled, connection) -> handled.then(Mono.defer(() -> {
            if (connection instanceof HttpServerResponse response && !response.hasSentHeaders()
                    && response.status().code() >= 400) {
                int status = response.status().code();
                return response.header(HttpHeaderNames.CONTENT_TYPE, "application/json")
                        .sendString(Mono.just("{\"status\":" + status + ",\"errors\":[\""
                                + reason(HttpStatusCode.valueOf(status)) + "\"]}"))
                        .then();
            }
            return Mono.empty();
        })));
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

    /** JSON even when the request's Accept header does not list it: the error body is always JSON. */
    private static ResponseEntity<ApiError> error(HttpStatusCode status, List<String> messages) {
        return ResponseEntity.status(status).contentType(MediaType.APPLICATION_JSON)
                .body(new ApiError(status.value(), messages));
    }
}

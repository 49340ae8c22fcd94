package dev.perflab.quarkus;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import jakarta.validation.ConstraintViolation;
import jakarta.validation.ConstraintViolationException;
import jakarta.validation.Path;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.MediaType;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.RestResponse;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

import java.util.List;
import java.util.stream.Collectors;

/** Every error answer is the contract's {"status", "errors": [...]}, whatever raised it. */
public class ErrorMapper {
    private static final Logger LOG = Logger.getLogger(ErrorMapper.class);

    public record Error(int status, List<String> errors) {
    }

    /** "name: must not be blank": the leaf of the property path (parameter or field), then HV's message. */
    @ServerExceptionMapper
    public RestResponse<Error> violations(ConstraintViolationException e) {
        return error(400, e.getConstraintViolations().stream()
                .map(v -> leafName(v) + ": " + v.getMessage()).sorted().collect(Collectors.toList()));
    }

    @ServerExceptionMapper
    public RestResponse<Error> mismatchedJson(MismatchedInputException e) {
        return badJson(e);
    }

    @ServerExceptionMapper
    public RestResponse<Error> malformedJson(JsonProcessingException e) {
        return badJson(e);
    }

    @ServerExceptionMapper
    public RestResponse<Error> http(WebApplicationException e) {
        if (e.getCause() instanceof JsonProcessingException json) {
            return badJson(json);
        }
        int status = e.getResponse().getStatus();
        if (status >= 500) {
            LOG.error("Request failed", e);
        }
        String message = e.getMessage();
        return error(status, List.of(message == null || message.isBlank()
                ? e.getResponse().getStatusInfo().getReasonPhrase() : message));
    }

    @ServerExceptionMapper
    public RestResponse<Error> unexpected(Exception e) {
        LOG.error("Request failed", e);
        return error(500, List.of("internal error"));
    }

    private static RestResponse<Error> badJson(JsonProcessingException e) {
        String field = e instanceof JsonMappingException mapping && !mapping.getPath().isEmpty()
                ? mapping.getPath().get(mapping.getPath().size() - 1).getFieldName() : null;
        String message = e instanceof UnrecognizedPropertyException ? "unknown field" : e.getOriginalMessage();
        return error(400, List.of(field == null ? "invalid JSON: " + message : field + ": " + message));
    }

    private static String leafName(ConstraintViolation<?> violation) {
        String name = null;
        for (Path.Node node : violation.getPropertyPath()) {
            name = node.getName();
        }
        return name;
    }

    static RestResponse<Error> error(int status, List<String> errors) {
        return RestResponse.ResponseBuilder.<Error>create(status)
                .entity(new Error(status, errors)).type(MediaType.APPLICATION_JSON_TYPE).build();
    }
}

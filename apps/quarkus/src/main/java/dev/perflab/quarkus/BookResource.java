package dev.perflab.quarkus;

import io.quarkus.hibernate.reactive.panache.Panache;
import io.quarkus.panache.common.Sort;
import io.smallrye.mutiny.Uni;
import jakarta.validation.Valid;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Positive;
import jakarta.validation.constraints.Size;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.NotFoundException;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import org.jboss.resteasy.reactive.RestResponse;

import java.util.List;

/**
 * Report 4: books and orders. Transactions are opened in the method body (not with @WithTransaction)
 * so that Bean Validation rejects bad input before a connection is taken or BEGIN is sent.
 */
@Path("/")
public class BookResource {
    public record NewBook(@NotBlank @Size(max = 128) String title, @NotBlank @Size(max = 128) String author) {
    }

    public record NewOrder(@NotNull @Positive Long bookId, @NotNull @Positive Long userId) {
    }

    @GET
    @Path("books")
    public Uni<List<Book>> list() {
        return Panache.withSession(() -> Book.listAll(Sort.by("id")));
    }

    @POST
    @Path("books")
    public Uni<RestResponse<Book>> create(@Valid @NotNull NewBook body) {
        Book book = new Book();
        book.title = body.title();
        book.author = body.author();
        return Panache.withTransaction(book::<Book>persist)
                .map(created -> RestResponse.status(RestResponse.Status.CREATED, created));
    }

    /** The book is checked first, then the user (contract: 1 SELECT when the book is unknown). */
    @POST
    @Path("orders")
    public Uni<RestResponse<BookOrder>> order(@Valid @NotNull NewOrder body) {
        return Panache.withTransaction(() -> Book.<Book>findById(body.bookId())
                .onItem().ifNull().failWith(() -> new NotFoundException("book " + body.bookId() + " not found"))
                .chain(book -> AppUser.<AppUser>findById(body.userId()))
                .onItem().ifNull().failWith(() -> new NotFoundException("user " + body.userId() + " not found"))
                .chain(user -> {
                    BookOrder order = new BookOrder();
                    order.bookId = body.bookId();
                    order.userId = body.userId();
                    return order.<BookOrder>persist();
                }))
                .map(created -> RestResponse.status(RestResponse.Status.CREATED, created));
    }
}

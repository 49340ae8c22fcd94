package dev.perflab.quarkus;

import io.quarkus.hibernate.reactive.panache.PanacheEntityBase;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Size;

/** Report 1's table; also the POST body (every field required), since request and row are the same shape. */
@Entity
@Table(name = "zipcode")
public class ZipCode extends PanacheEntityBase {
    public static final String ZIP_PATTERN = "^[0-9]{5}(-[0-9]{4})?$";

    @Id
    @NotNull
    @Pattern(regexp = ZIP_PATTERN)
    public String zip;

    @NotBlank @Size(max = 64)
    public String city;

    @NotBlank @Size(max = 64)
    public String county;

    @NotNull @Pattern(regexp = "^[A-Z]{2}$")
    public String state;

    @NotBlank @Size(max = 32)
    public String timezone;

    @NotBlank @Size(max = 16)
    public String type;
}

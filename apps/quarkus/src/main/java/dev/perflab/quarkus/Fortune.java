package dev.perflab.quarkus;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** TechEmpower's Fortune row, a line of templates/TechEmpowerDbResource/fortunes.html. */
@Entity
@Table(name = "fortune")
public class Fortune {
    @Id
    public int id;

    public String message;

    public Fortune() {
    }

    Fortune(int id, String message) {
        this.id = id;
        this.message = message;
    }
}

package dev.perflab.quarkus;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** TechEmpower's World row; also its JSON, {"id", "randomNumber"}. */
@Entity
@Table(name = "world")
public class World {
    @Id
    public int id;

    @Column(name = "randomnumber")
    public int randomNumber;
}

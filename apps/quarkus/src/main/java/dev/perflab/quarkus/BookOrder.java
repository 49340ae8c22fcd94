package dev.perflab.quarkus;

import io.quarkus.hibernate.reactive.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/**
 * Plain id columns rather than @ManyToOne: the resource has already loaded the book and the user
 * (the contract's two SELECTs), and the answer is {id, bookId, userId}, so associations would only
 * add lazy proxies to serialize.
 */
@Entity
@Table(name = "book_order")
public class BookOrder extends PanacheEntityBase {
    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    public Long id;

    @Column(name = "book_id")
    public Long bookId;

    @Column(name = "user_id")
    public Long userId;
}

import { describe, expect, it } from 'vitest';
import { connectionRefusal } from './refusals.js';

const SOCKET = 'postgres://ada@localhost/lab?host=/srv/p/.portico/postgres';

describe('connectionRefusal: what to do when PostgreSQL refuses', () => {
  it('no server on the socket folder or the port: is it running, and how to get one', () => {
    expect(connectionRefusal({ code: 'ENOENT', message: 'connect ENOENT /srv/p/.portico/postgres/.s.PGSQL.5432' }, SOCKET)).toMatch(
      /^No PostgreSQL server listens in the socket folder \/srv\/p\/\.portico\/postgres: is it running\? .*service postgresql start.*portico db start/,
    );
    expect(connectionRefusal({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 10.0.0.5:6543' }, 'postgres://ada@10.0.0.5:6543/lab')).toMatch(
      /^No PostgreSQL server accepts connections at 10\.0\.0\.5:6543/,
    );
  });

  it('names the missing user, role or database with the command that makes it', () => {
    expect(connectionRefusal({ code: '28000', message: 'no PostgreSQL user name specified in startup packet' }, 'postgres:///lab?host=/var/run/postgresql')).toContain(
      'name the user in the URL, as in postgres://USER@localhost/lab?host=/var/run/postgresql',
    );
    expect(connectionRefusal({ code: '28000', message: 'role "ada" does not exist' }, SOCKET)).toContain('runuser -u postgres -- createuser --createdb ada');
    expect(connectionRefusal({ code: '3D000', message: 'database "lab" does not exist' }, SOCKET)).toContain('createdb -h /srv/p/.portico/postgres -U ada lab');
    expect(connectionRefusal({ code: '3D000', message: 'database "lab" does not exist' }, 'postgres://ada@db.example.org:5433/lab')).toContain('createdb -h db.example.org -p 5433 -U ada lab');
  });

  it('a wrong password, peer authentication and pg_hba.conf each say what to change', () => {
    expect(connectionRefusal({ code: '28P01', message: 'password authentication failed for user "ada"' }, 'postgres://ada:x@h/lab')).toContain("refused the password of user 'ada'");
    expect(connectionRefusal({ code: '28000', message: 'Peer authentication failed for user "postgres"' }, 'postgres://postgres@localhost/lab?host=/var/run/postgresql')).toContain('peer authentication');
    expect(connectionRefusal({ code: '28000', message: 'no pg_hba.conf entry for host "10.0.0.9", user "ada", database "lab"' }, 'postgres://ada@h/lab')).toContain('pg_hba.conf');
  });

  it('says nothing of other errors: a failing statement is not a refused connection', () => {
    expect(connectionRefusal({ code: '42P01', message: 'relation "x" does not exist' }, SOCKET)).toBeUndefined();
    expect(connectionRefusal({ code: 'ETIMEDOUT', message: 'timeout' }, SOCKET)).toBeUndefined();
  });
});
